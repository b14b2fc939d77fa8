package watchsrc

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/kestrel-lm/kestrel/internal/fileguard"
	"github.com/kestrel-lm/kestrel/internal/rundir"
	"github.com/kestrel-lm/kestrel/monitor"
)

// RunOptions are kestrel watch's choices around one source.
type RunOptions struct {
	Options
	// Maps are --map flags, each kestrel_name=source_field.
	Maps []string
	// Out, when set, receives metrics.jsonl (kestrel's names), alerts.jsonl
	// and SEV0 incident bundles, so kestrel dash Out shows the run.
	Out string
	// Store, when set, also receives metrics, events and alerts (SQLite).
	Store string
	// Overwrite lets Out be a non-empty directory that is not an earlier
	// watch's (never the source, a run's directory or a live run's).
	Overwrite bool
	// Logger receives alerts with their runbook text (nil: discarded).
	Logger *slog.Logger
}

// Counts are the alerts a watch raised, by severity.
type Counts map[monitor.Severity]int

// Result is what a watch found: its alerts by severity and what the read
// saw (bad lines skipped, fields).
type Result struct {
	Counts Counts
	Report
}

// NoLossError is returned by Run when the source carried none of
// LossMetrics under any name kestrel knows: the watch could not judge the
// run, whatever its alert counts say.
type NoLossError struct {
	Source string
	Fields []string // the source's field names seen
}

// maxFieldsShown bounds the fields a NoLossError names.
const maxFieldsShown = 40

func (e *NoLossError) Error() string {
	seen := "no fields"
	if n := len(e.Fields); n > 0 {
		fs := e.Fields[:min(n, maxFieldsShown)]
		seen = "fields seen: " + strings.Join(fs, ", ")
		if n > len(fs) {
			seen += fmt.Sprintf(" and %d more", n-len(fs))
		}
	}
	return fmt.Sprintf("watch: %s: no loss metric recognised (%s); name the loss with --map train_loss_raw=FIELD (or val_loss=FIELD)", e.Source, seen)
}

// Run applies the monitor configured by mc (its file sinks and pausing
// switched off) to the source at src and calls onAlert for every alert.
// A source in which no loss metric was recognised is a *NoLossError (the
// watch could not have seen a blow-up); bad lines are counted in the
// Result, not errors.
func Run(ctx context.Context, src string, mc monitor.Config, o RunOptions, onAlert func(monitor.Alert)) (*Result, error) {
	mapping := map[string]string{}
	for _, m := range o.Maps {
		k, v, ok := strings.Cut(m, "=")
		if !ok || k == "" || v == "" {
			return nil, fmt.Errorf("watch: --map %q: want kestrel_name=source_field", m)
		}
		mapping[k] = v
	}
	o.Options.Map = mapping
	mc.SQLite, mc.TensorBoard, mc.TraceSteps, mc.PrometheusAddr = false, false, 0, ""
	mc.PauseOnSEV0 = false
	opts := monitor.Options{RunDir: o.Out, NoFileSinks: true, Logger: o.Logger}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.Store != "" {
		if err := checkStore(src, o.Store); err != nil {
			return nil, fmt.Errorf("watch: %w", err)
		}
	}
	if o.Out != "" {
		lock, err := prepareOut(src, o.Out, o.Overwrite, opts.Logger)
		if err != nil {
			return nil, fmt.Errorf("watch: %w", err)
		}
		defer lock.Release()
		if b, err := fileguard.ReadFile(rundir.Of(src).Config(), maxConfigBytes); err == nil {
			opts.ConfigTOML = b
		}
		// metrics.jsonl in kestrel's names beside alerts.jsonl, so
		// `kestrel dash OUT` shows the run with its alerts.
		js, err := monitor.OpenJSONLSink(rundir.Of(o.Out).Metrics())
		if err != nil {
			return nil, fmt.Errorf("watch: %w", err)
		}
		opts.Sinks = append(opts.Sinks, js)
	}
	if o.Store != "" {
		s, err := monitor.OpenStore(o.Store)
		if err != nil {
			return nil, fmt.Errorf("watch: %w", err)
		}
		s.SetRunInfo("source", src)
		opts.Sinks = append(opts.Sinks, s)
	}
	m, err := monitor.New(mc, opts)
	if err != nil {
		return nil, fmt.Errorf("watch: %w", err)
	}
	res := &Result{Counts: Counts{}}
	rep, werr := Watch(ctx, src, o.Options, m, func(a monitor.Alert) {
		res.Counts[a.Severity]++
		onAlert(a)
	})
	res.Report = rep
	cerr := m.Close()
	if werr != nil {
		return res, fmt.Errorf("watch: %w", werr)
	}
	if cerr != nil {
		return res, fmt.Errorf("watch: %w", cerr)
	}
	if !rep.Loss {
		return res, &NoLossError{Source: src, Fields: rep.Fields}
	}
	return res, nil
}

// maxConfigBytes bounds the source run's config.toml read for incident
// bundles.
const maxConfigBytes = 1 << 20

// Exit is the error kestrel watch exits with after a watch that itself
// succeeded: SEV0 alerts unless allowSEV0, then skipped data unless
// allowBad (a watch that could not read everything is no all-clear).
func (r *Result) Exit(allowSEV0, allowBad bool) error {
	if n := r.Counts[monitor.SEV0]; n > 0 && !allowSEV0 {
		return fmt.Errorf("watch: %d SEV0 alerts (--allow-sev0 to exit 0)", n)
	}
	if r.BadLines > 0 && !allowBad {
		return fmt.Errorf("watch: %d bad lines or records skipped, so the watch is incomplete (--allow-bad to exit 0)", r.BadLines)
	}
	return nil
}
