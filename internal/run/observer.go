package run

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"slices"
	"time"

	"github.com/kestrel-lm/kestrel/internal/rewind"

	"github.com/kestrel-lm/kestrel/internal/checkpoint"

	"github.com/kestrel-lm/kestrel/internal/buildinfo"
	"github.com/kestrel-lm/kestrel/internal/config"
	"github.com/kestrel-lm/kestrel/internal/data/datareport"
	"github.com/kestrel-lm/kestrel/internal/runlog"
	"github.com/kestrel-lm/kestrel/internal/train"
	"github.com/kestrel-lm/kestrel/monitor"
)

// Observer feeds the trainer's typed records to the monitor (the ICU
// panel). It implements train.Observer: OnStep returns an error once a SEV0
// alert paused the run, which stops training without a new checkpoint.
type Observer struct {
	m       *monitor.Monitor
	runDir  string
	log     *slog.Logger
	prevMan *runlog.Manifest // manifest.json of the run being resumed (nil = fresh run)
	checked bool
	seeded  bool // the monitor's windows hold the run's history (seedMonitor)
	last    runlog.Step
	health  healthTrack // losses for checkpoint health (health.go)
	// stopOnData stops the run on a data event (rescue.on names
	// data_event); dataEvent is the alert it stopped on.
	stopOnData bool
	dataEvent  *runlog.Alert
	// Batch, when set, names the sources and documents of a metrics step's
	// batch, so incident bundles and "data event" verdicts can name them.
	Batch func(step int) *monitor.Batch
}

// NewObserver starts the monitor for a training run in runDir. With
// monitor.enabled = false it returns an observer that does nothing. The
// manifest the run directory holds now is kept to compare with the one the
// trainer writes at its start. man, when not nil, holds the identity of the
// run's inputs, recorded in the metric store's run table.
func NewObserver(cfg config.Config, runDir string, log *slog.Logger, man *runlog.Manifest) (*Observer, error) {
	if log == nil {
		log = slog.Default()
	}
	t := &Observer{runDir: runDir, log: log, health: newHealthTrack(cfg.Monitor),
		stopOnData: cfg.Rescue.AutoRollback && slices.Contains(cfg.Rescue.On, rewind.RescueOnDataEvent)}
	if !cfg.Monitor.Enabled {
		return t, nil
	}
	if err := os.MkdirAll(runDir, 0o755); err != nil {
		return nil, fmt.Errorf("monitor: %w", err)
	}
	switch prev, err := runlog.ReadManifest(runDir); {
	case err == nil:
		t.prevMan = prev
	case !errors.Is(err, fs.ErrNotExist):
		log.Warn("monitor: the run's previous manifest is unreadable; resume checks skipped", "err", err)
	}
	opts := monitor.Options{RunDir: runDir, Logger: log, RunInfo: map[string]string{"name": cfg.Run.Name}, Vocab: cfg.Model.Vocab}
	if b, err := config.Marshal(cfg); err == nil {
		opts.ConfigTOML = b
	}
	if h, err := config.Hash(cfg); err == nil {
		opts.RunInfo["config_hash"] = h
	}
	if sha, _ := buildinfo.VCS(); sha != "" {
		opts.RunInfo["git_sha"] = sha
	}
	if man != nil {
		for k, v := range map[string]string{"dataset_hash": man.DatasetHash, "tokenizer_hash": man.TokenizerHash} {
			if v != "" {
				opts.RunInfo[k] = v
			}
		}
	}
	opts.WarmupSteps = cfg.Optim.WarmupSteps(cfg.Train.Steps)
	opts.MixStages = mixStages(cfg)
	if cfg.Data.Kind == "dataset" && cfg.Data.Path != "" {
		v, err := dataVitals(cfg)
		if err != nil {
			log.Warn("monitor: data vitals", "err", err)
		}
		opts.DataVitals = v
	}
	t.health.loadPrior(runDir, log) // before the monitor appends to alerts.jsonl
	m, err := monitor.New(cfg.Monitor, opts)
	if err != nil {
		return nil, fmt.Errorf("monitor: %w", err)
	}
	t.m = m
	return t, nil
}

// stepSample is the monitor's sample of one step: the record's values, and
// the step's phases laid out for trace.json.
func stepSample(sm *runlog.Step) monitor.Sample {
	s := monitor.Sample{Step: int64(sm.Step), Tokens: sm.TokensSeen, Values: runlog.Values(sm, nil)}
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
	s.Ops = stepOps(sm)
	return s
}

// OnStep implements train.Observer.
func (t *Observer) OnStep(sm *runlog.Step) error {
	if t.m == nil {
		return nil
	}
	if !t.seeded {
		t.seeded = true
		t.seedMonitor(sm.Step)
	}
	t.last = *sm
	t.health.observe(sm, t.m.Alerts)
	if !t.checked {
		t.checked = true
		cur, err := runlog.ReadManifest(t.runDir) // as the trainer rewrote it for this start
		t.checkManifest(int64(sm.Step), cur, err)
		t.checkStarts(int64(sm.Step), cur, err) // restart_storm (restarts.go)
	}
	s := stepSample(sm)
	if t.Batch != nil {
		s.Batch = t.Batch(sm.Step)
	}
	alerts := t.m.Observe(s)
	if paused, why := t.m.Paused(); paused {
		return fmt.Errorf("monitor paused the run: %s", why)
	}
	if t.stopOnData {
		for i := range alerts {
			if a := alerts[i]; dataEvent(a) {
				t.dataEvent = &a
				return fmt.Errorf("rescue: data event at step %d (%s): %s", a.Step, a.Rule, a.Message)
			}
		}
	}
	return nil
}

// dataEvent reports whether a is an incident of the data: a SEV1 batch
// that does not look like the run's data, or a loss spike whose verdict
// is a data event.
func dataEvent(a runlog.Alert) bool {
	return a.Rule == monitor.RuleBatchAnomaly && a.Severity == monitor.SEV1 ||
		a.Rule == monitor.RuleSpikeVerdict && a.Verdict == monitor.VerdictDataEvent && a.Severity != monitor.SEV2
}

// PausedBy returns the SEV0 alert that paused the run, and whether one did.
func (t *Observer) PausedBy() (runlog.Alert, bool) {
	if t.m == nil {
		return runlog.Alert{}, false
	}
	return t.m.PausedBy()
}

// alerts returns the alerts the monitor fired so far (nil when it is off).
func (t *Observer) alerts() []runlog.Alert {
	if t.m == nil {
		return nil
	}
	return t.m.Alerts()
}

// Note records a note event at step (shown on the dashboard's event list).
func (t *Observer) Note(step int, msg string) {
	if t.m != nil {
		t.m.Record(monitor.Event{Kind: monitor.EventNote, Step: int64(step), Tokens: t.last.TokensSeen, OK: true, Detail: msg})
	}
}

// OnStepStart implements train.StepStarter: it arms the monitor's stall
// watchdog until the step's OnStep.
func (t *Observer) OnStepStart(step int) {
	if t.m != nil {
		t.m.StepStarted(int64(step))
	}
}

// OnEval implements train.Observer.
func (t *Observer) OnEval(e *runlog.Eval) error {
	if t.m == nil {
		return nil
	}
	t.m.Record(monitor.Event{Kind: monitor.EventEval, Step: int64(e.Step), Tokens: e.TokensSeen, OK: true, Values: runlog.Values(e, nil)})
	if paused, why := t.m.Paused(); paused {
		return fmt.Errorf("monitor paused the run: %s", why)
	}
	return nil
}

// OnCheckpoint implements train.Observer.
func (t *Observer) OnCheckpoint(ev *runlog.Checkpoint) error {
	if t.m == nil {
		return nil
	}
	t.m.Record(monitor.Event{Kind: monitor.EventCheckpoint, Step: int64(ev.Step), Tokens: ev.TokensSeen, OK: true, Path: ev.Dir, Detail: ev.Kind, Values: runlog.Values(ev, nil)})
	return nil
}

// checkManifest compares the manifest of the run being resumed (read before
// training rewrote it) with the one the trainer just wrote (cur, or the
// error reading it), field by typed field; a difference is the SEV1
// manifest_mismatch naming each field.
func (t *Observer) checkManifest(step int64, cur *runlog.Manifest, err error) {
	if t.prevMan == nil {
		return
	}
	if err != nil {
		t.log.Warn("monitor: resume check skipped", "err", err)
		return
	}
	if diffs := t.prevMan.Diff(cur); len(diffs) > 0 {
		t.m.ManifestMismatch(step, diffs)
	}
}

// Finish records how the run ended — a NaN/Inf stop or a failed checkpoint
// becomes a SEV0 alert with its incident bundle — closes the monitor, and
// returns runErr (joined with a monitor close error).
func (t *Observer) Finish(runErr error) error {
	if t.m == nil {
		return runErr
	}
	var nanErr *train.NaNError
	var ckErr *checkpoint.Error
	switch {
	case t.rankHang(runErr): // a data-parallel rank never reached a collective (dp.go)
	case errors.As(runErr, &nanErr):
		t.m.Observe(monitor.Sample{Step: int64(nanErr.Step), Tokens: t.last.TokensSeen, Values: map[string]float64{"nan_inf_events": 1}})
	case errors.As(runErr, &ckErr) && !errors.Is(runErr, context.Canceled):
		// Only a checkpoint that could not be saved (or verified) is
		// checkpoint_failed, not every error that mentions one.
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
func stepPhases(sm *runlog.Step, end time.Time) []monitor.Phase {
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

// stepOps are the model's per-op spans of a traced step, for trace.json
// (nested inside forward and backward by the trace writer).
func stepOps(sm *runlog.Step) []monitor.Phase {
	if len(sm.OpSpans) == 0 {
		return nil
	}
	out := make([]monitor.Phase, len(sm.OpSpans))
	for i, sp := range sm.OpSpans {
		out[i] = monitor.Phase{Name: sp.Name, Start: sp.Start, Dur: sp.Dur}
	}
	return out
}

// traceOps is train.Options.TraceOps for the monitor's trace.json window:
// the steps [trace_from_step, trace_from_step + trace_steps); nil when no
// trace is written.
func traceOps(mc monitor.Config) func(step int) bool {
	if mc.TraceSteps <= 0 {
		return nil
	}
	from, until := mc.TraceFromStep, mc.TraceFromStep+mc.TraceSteps
	return func(step int) bool { return step >= from && step < until }
}

// dataVitals are the run-start data metrics of cfg's prepared dataset, from its
// report.json: near_dup_rate, train_val_overlap (the largest over the
// decontamination sets; absent when the data was not decontaminated) and
// bytes_per_token.
func dataVitals(cfg config.Config) (map[string]float64, error) {
	rc, err := config.Resolve(cfg, "data")
	if err != nil {
		return nil, err
	}
	r, err := datareport.Load(rc.Data.Path)
	if err != nil {
		return nil, err
	}
	v := map[string]float64{"near_dup_rate": r.NearDupRate}
	if len(r.TrainValOverlap) > 0 {
		worst := 0.0
		for _, x := range r.TrainValOverlap {
			worst = max(worst, x)
		}
		v["train_val_overlap"] = worst
	}
	if r.Tokens != nil && r.Tokens.TotalTokens > 0 && r.Kept.Bytes > 0 {
		v["bytes_per_token"] = float64(r.Kept.Bytes) / float64(r.Tokens.TotalTokens)
	}
	return v, nil
}

// mixStages is the data mixture schedule of the run for the
// mixture-drift rule: data.sources from step 1 (absent when the sources are
// not listed: the loader then weights every source by its train tokens),
// then each data.stages entry from its start_step with its ramp_steps
// (metrics steps, like the samples the monitor sees). The monitor
// normalises the weights.
func mixStages(cfg config.Config) []monitor.MixStage {
	var out []monitor.MixStage
	if len(cfg.Data.Sources) > 0 {
		w := map[string]float64{}
		for _, s := range cfg.Data.Sources {
			w[s.Name] += s.Weight
		}
		out = append(out, monitor.MixStage{StartStep: 1, Weights: w})
	}
	for _, st := range cfg.Data.Stages {
		w := make(map[string]float64, len(st.Weights))
		for k, x := range st.Weights {
			w[k] = x
		}
		out = append(out, monitor.MixStage{StartStep: int64(st.StartStep), RampSteps: int64(st.RampSteps), Weights: w})
	}
	return out
}
