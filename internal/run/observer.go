package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/kestrel-lm/kestrel/internal/config"
	"github.com/kestrel-lm/kestrel/internal/train"
	"github.com/kestrel-lm/kestrel/monitor"
)

// trainMonitor feeds kestrel train's observer hooks to the monitor (the ICU
// panel). It implements train.Observer: OnStep returns an error once a SEV0
// alert paused the run, which stops training without a new checkpoint.
//
// Wiring in train.go:
//
//	tm, err := newTrainMonitor(cfg, out, logger)
//	if err != nil { return err }
//	o.Observers = append(o.Observers, tm)
//	res, err := train.Run(ctx, o)
//	err = tm.Finish(err)
type trainMonitor struct {
	m       *monitor.Monitor
	runDir  string
	log     *slog.Logger
	prevMan map[string]any // manifest.json of the run being resumed (nil = fresh run)
	checked bool
	last    train.StepMetrics
	// batch, when set, names the sources and documents of a metrics step's
	// batch, so incident bundles and "data event" verdicts can name them.
	batch func(step int) *monitor.Batch
}

// manifestKeys are the manifest.json fields compared on resume.
var manifestKeys = []string{"git_sha", "go_version", "os_arch", "gemm", "config_hash", "tokenizer", "tokenizer_hash", "data", "dataset_hash", "probe_hash", "eval_hashes"}

// newTrainMonitor starts the monitor for a training run in runDir. With
// monitor.enabled = false it returns an observer that does nothing.
func newTrainMonitor(cfg config.Config, runDir string, log *slog.Logger) (*trainMonitor, error) {
	if log == nil {
		log = slog.Default()
	}
	t := &trainMonitor{runDir: runDir, log: log}
	if !cfg.Monitor.Enabled {
		return t, nil
	}
	if err := os.MkdirAll(runDir, 0o755); err != nil {
		return nil, fmt.Errorf("monitor: %w", err)
	}
	if b, err := os.ReadFile(filepath.Join(runDir, "manifest.json")); err == nil {
		_ = json.Unmarshal(b, &t.prevMan)
	}
	opts := monitor.Options{RunDir: runDir, Logger: log}
	if b, err := config.Marshal(cfg); err == nil {
		opts.ConfigTOML = b
	}
	if len(cfg.Data.Sources) > 0 && len(cfg.Data.Stages) == 0 {
		var sum float64
		for _, s := range cfg.Data.Sources {
			sum += s.Weight
		}
		if sum > 0 {
			opts.MixTargets = map[string]float64{}
			for _, s := range cfg.Data.Sources {
				opts.MixTargets[s.Name] = s.Weight / sum
			}
		}
	}
	if cfg.Data.Kind == "dataset" && cfg.Data.Path != "" {
		for _, n := range []string{"report.json", "manifest.json"} {
			p := filepath.Join(cfg.Data.Path, n)
			if b, err := os.ReadFile(p); err == nil {
				v, err := monitor.DataVitalsFromJSON(b, p)
				if err != nil {
					log.Warn("monitor: data vitals", "err", err)
					continue
				}
				if len(v) > 0 {
					opts.DataVitals = v
					break
				}
			}
		}
	}
	m, err := monitor.New(cfg.Monitor, opts)
	if err != nil {
		return nil, fmt.Errorf("monitor: %w", err)
	}
	t.m = m
	return t, nil
}

// sample converts one metrics line into a monitor sample, with the step's
// phases laid out back to back ending at the line's time.
func stepSample(sm train.StepMetrics) (monitor.Sample, error) {
	b, err := json.Marshal(sm)
	if err != nil {
		return monitor.Sample{}, err
	}
	s, _, err := monitor.ParseJSONLLine(b, nil, "metrics", sm.Step)
	if err != nil {
		return s, err
	}
	s.Step, s.Tokens = int64(sm.Step), sm.TokensSeen
	// The sample is stamped at the end of the step: the end of its last
	// measured phase (unix_time is when the step began).
	end := time.Unix(0, int64(sm.UnixTime*1e9))
	if n := len(sm.Spans); n > 0 {
		end = sm.Spans[n-1].Start.Add(sm.Spans[n-1].Dur)
	} else if sm.UnixTime == 0 {
		end = time.Now()
	}
	s.Time = end
	s.Phases = stepPhases(sm, end)
	return s, nil
}

// OnStep implements train.Observer.
func (t *trainMonitor) OnStep(sm train.StepMetrics) error {
	if t.m == nil {
		return nil
	}
	t.last = sm
	if !t.checked {
		t.checked = true
		t.checkManifest(int64(sm.Step))
	}
	s, err := stepSample(sm)
	if err != nil {
		return fmt.Errorf("monitor: step %d: %w", sm.Step, err)
	}
	if t.batch != nil {
		s.Batch = t.batch(sm.Step)
	}
	t.m.Observe(s)
	if paused, why := t.m.Paused(); paused {
		return fmt.Errorf("monitor paused the run: %s", why)
	}
	return nil
}

// OnEval implements train.Observer.
func (t *trainMonitor) OnEval(e train.EvalMetrics) error {
	if t.m == nil {
		return nil
	}
	vals := map[string]float64{"val_loss": e.ValLoss, "train_val_gap": e.TrainValGap, "eval_time": e.EvalTime}
	if e.ValLossEMA != 0 {
		vals["val_loss_ema"], vals["ema_gap"] = e.ValLossEMA, e.EMAGap
	}
	for k, v := range e.SliceValLoss {
		vals["slice_val_loss/"+k] = v
	}
	for k, v := range map[string]float64{"fixed_probe_loss": e.FixedProbeLoss, "logit_entropy_probe": e.LogitEntropyProbe, "topk_mass_probe": e.TopKMassProbe} {
		if v != 0 {
			vals[k] = v
		}
	}
	t.m.Record(monitor.Event{Kind: monitor.EventEval, Step: int64(e.Step), Tokens: e.TokensSeen, OK: true, Values: vals})
	if paused, why := t.m.Paused(); paused {
		return fmt.Errorf("monitor paused the run: %s", why)
	}
	return nil
}

// OnCheckpoint implements train.Observer.
func (t *trainMonitor) OnCheckpoint(ev train.CheckpointEvent) error {
	if t.m == nil {
		return nil
	}
	vals := map[string]float64{"checkpoint_ok": 1, "checkpoint_time": ev.Seconds, "checkpoint_size": float64(ev.Bytes)}
	if ev.OutputKLToPrev != nil {
		vals["output_kl_to_prev"] = *ev.OutputKLToPrev
	}
	t.m.Record(monitor.Event{Kind: monitor.EventCheckpoint, Step: int64(ev.Step), OK: true, Path: ev.Dir, Detail: ev.Kind, Values: vals})
	return nil
}

// checkManifest compares the manifest of the run being resumed (read before
// training rewrote it) with the one the trainer just wrote.
func (t *trainMonitor) checkManifest(step int64) {
	if t.prevMan == nil {
		return
	}
	b, err := os.ReadFile(filepath.Join(t.runDir, "manifest.json"))
	if err != nil {
		return
	}
	var cur map[string]any
	if json.Unmarshal(b, &cur) != nil {
		return
	}
	var diffs []string
	for _, k := range manifestKeys {
		a, _ := json.Marshal(t.prevMan[k])
		c, _ := json.Marshal(cur[k])
		if string(a) != string(c) {
			diffs = append(diffs, fmt.Sprintf("%s: %s → %s", k, clip(string(a)), clip(string(c))))
		}
	}
	sort.Strings(diffs)
	if len(diffs) > 0 {
		t.m.ManifestMismatch(step, diffs)
	}
}

func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// Finish records how the run ended — a NaN/Inf stop or a failed checkpoint
// becomes a SEV0 alert with its incident bundle — closes the monitor, and
// returns runErr (joined with a monitor close error).
func (t *trainMonitor) Finish(runErr error) error {
	if t.m == nil {
		return runErr
	}
	var nanErr *train.NaNError
	switch {
	case errors.As(runErr, &nanErr):
		t.m.Observe(monitor.Sample{Step: int64(nanErr.Step), Tokens: t.last.TokensSeen, Values: map[string]float64{"nan_inf_events": 1}})
	case runErr != nil && !errors.Is(runErr, context.Canceled) && strings.Contains(runErr.Error(), "checkpoint") && !strings.Contains(runErr.Error(), "monitor paused"):
		t.m.Record(monitor.Event{Kind: monitor.EventCheckpoint, Step: int64(t.last.Step), OK: false, Detail: runErr.Error()})
	}
	if err := t.m.Close(); err != nil {
		t.log.Warn("monitor close", "err", err)
	}
	return runErr
}

// stepPhases lays out a step for trace.json: the evaluation and checkpoint
// that ran since the previous step (they end where this step's first
// measured span starts), then the measured spans (data wait, forward and
// backward per micro-batch, optimizer).
func stepPhases(sm train.StepMetrics, end time.Time) []monitor.Phase {
	var out []monitor.Phase
	first := end
	if len(sm.Spans) > 0 {
		first = sm.Spans[0].Start
	} else {
		first = end.Add(-time.Duration((sm.DataWaitTime + sm.ForwardTime + sm.BackwardTime + sm.OptimizerTime) * float64(time.Second)))
	}
	at := first.Add(-time.Duration((sm.EvalTime + sm.CheckpointTime) * float64(time.Second)))
	for _, p := range []struct {
		name string
		sec  float64
	}{{"eval", sm.EvalTime}, {"checkpoint", sm.CheckpointTime}} {
		if p.sec > 0 {
			d := time.Duration(p.sec * float64(time.Second))
			out = append(out, monitor.Phase{Name: p.name, Start: at, Dur: d})
			at = at.Add(d)
		}
	}
	for _, sp := range sm.Spans {
		if sp.Dur > 0 {
			out = append(out, monitor.Phase{Name: sp.Name, Start: sp.Start, Dur: sp.Dur})
		}
	}
	return out
}
