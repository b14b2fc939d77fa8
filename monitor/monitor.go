package monitor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/kestrel-lm/kestrel/internal/rundir"
	"github.com/kestrel-lm/kestrel/internal/runlog"
)

// Sink receives everything the monitor sees. Implementations must be safe
// to call from one goroutine at a time (the monitor serialises calls).
type Sink interface {
	WriteSample(s *Sample) error
	WriteEvent(e *Event) error
	WriteAlert(a *Alert) error
	Close() error
}

// Options are the run-specific inputs of a Monitor that are not config.
type Options struct {
	// RunDir is the run directory: alerts.jsonl, incidents/, metrics.sqlite,
	// event files and trace.json go there. Empty = no files (stdout only).
	RunDir string
	// Logger receives alerts (default slog.Default()).
	Logger *slog.Logger
	// ConfigTOML is the resolved run config, copied into incident bundles
	// (default: <RunDir>/config.toml when it exists).
	ConfigTOML []byte
	// MixTargets are target source weights for the mixture-drift rule
	// (overridden by Config.MixTargets when that is set, and by MixStages).
	MixTargets map[string]float64
	// MixStages is the data mixture schedule (the loader's data.sources
	// from step 1, then each data.stages entry): the mixture-drift rule
	// compares source_mix_share with the weights of the stage in force at
	// each step, and slice_val_regression leaves out a source whose weight
	// a stage lowered. Overridden by Config.MixTargets when that is set.
	MixStages []MixStage
	// WarmupSteps is the run's learning-rate warm-up length in steps, after
	// which flat_loss_after_warmup expects the loss to fall. 0 = none or
	// unknown: the end of warm-up is then the last step at which the
	// samples' learning_rate rose.
	WarmupSteps int
	// TokenHist is the dataset's token histogram (counts per token id) for
	// token_kl_drift; nil = off.
	TokenHist []float64
	// DataVitals are run-start data metrics (near_dup_rate,
	// train_val_overlap, bytes_per_token, seq_len_p50/p95) recorded once.
	DataVitals map[string]float64
	// Sinks are extra sinks besides the ones Config enables.
	Sinks []Sink
	// NoFileSinks disables the config-enabled file sinks (sqlite,
	// tensorboard, trace) while still writing alerts.jsonl and incidents.
	NoFileSinks bool
	// HTTPClient posts webhooks (default: a client with a 5 s timeout).
	HTTPClient *http.Client
	// Vocab is the model's output vocabulary size V: the divergence rule
	// compares losses with ln V, the loss of a uniform prediction. 0 =
	// unknown (those criteria are off; the window criteria still run).
	Vocab int
	// RunInfo is written to the run table of metrics.sqlite (run name,
	// config hash, the manifest's identity fields).
	RunInfo map[string]string
}

// MixStage is one stage of a data mixture schedule: its weights per
// source (normalised by the monitor; a source another stage names and
// this one does not has weight 0) from StartStep, a metrics step counted
// from 1, until the next stage starts. With RampSteps = R > 1 the weights
// at step StartStep+j (j < R−1) are the loader's linear ramp from the
// stage before, (1−a)·before + a·Weights with a = (j+1)/R
// (data.stages[].ramp_steps).
type MixStage struct {
	StartStep int64
	RampSteps int64
	Weights   map[string]float64
}

// Monitor is the ICU panel of one run. Feed it with Observe (one Sample per
// step) and Record (checkpoints, evals, resumes); it derives vitals, runs
// the alert rules and the spike classifier, writes sinks, alerts.jsonl and
// incident bundles, and asks the trainer to pause on SEV0.
type Monitor struct {
	cfg  Config
	opts Options
	log  *slog.Logger

	mu     sync.Mutex
	rules  *rules
	spikes *SpikeClassifier
	// spikeSteps are the steps of the loss spikes detected (for
	// loss_spike_cluster).
	spikeSteps []int64
	sinks      []Sink
	alertsF    *os.File
	recent     []Sample // last IncidentSteps samples (oldest first)
	lossEMA    float64
	emaN       int
	skips      float64 // last skipped_updates counter value
	lastLoss   float64 // train_loss_ema of the latest step (for train_val_gap)
	tokHist    []float64
	paused     bool
	reason     string
	pausedBy   Alert // the SEV0 alert that paused the run
	alerts     []Alert
	closed     bool
	// sinksClosed is set once Close closed the sinks and alerts.jsonl.
	sinksClosed bool
	webhookW    sync.WaitGroup
	errs        []error
	live        liveness // stall watchdog, blackout, tokens_seen flatline (liveness.go)
}

// New starts a Monitor. It opens <RunDir>/alerts.jsonl for appending and
// the sinks cfg enables.
func New(cfg Config, opts Options) (*Monitor, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	stages := opts.MixStages
	if len(stages) == 0 && len(opts.MixTargets) > 0 {
		stages = []MixStage{{StartStep: 0, Weights: opts.MixTargets}}
	}
	if len(cfg.MixTargets) > 0 {
		stages = []MixStage{{StartStep: 0, Weights: cfg.MixTargets}}
	}
	m := &Monitor{cfg: cfg, opts: opts, log: opts.Logger, rules: newRules(cfg, stages, opts.Vocab, opts.WarmupSteps),
		spikes: NewSpikeClassifier(cfg), lossEMA: math.NaN(), skips: math.NaN(), lastLoss: math.NaN()}
	m.spikes.plan.stages = m.rules.sched.laterStageStarts() // planned changes of the loss's level (gaprules.go)
	if opts.RunDir != "" {
		if err := os.MkdirAll(opts.RunDir, 0o755); err != nil {
			return nil, fmt.Errorf("monitor: %w", err)
		}
		f, err := os.OpenFile(rundir.Of(opts.RunDir).Alerts(), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			return nil, fmt.Errorf("monitor: %w", err)
		}
		m.alertsF = f
		if !opts.NoFileSinks {
			if err := m.openSinks(); err != nil {
				m.Close()
				return nil, err
			}
		}
	}
	if cfg.PrometheusAddr != "" {
		p, err := NewPrometheusSink(cfg.PrometheusAddr)
		if err != nil {
			m.Close()
			return nil, err
		}
		m.sinks = append(m.sinks, p)
	}
	m.sinks = append(m.sinks, opts.Sinks...)
	if opts.TokenHist != nil {
		m.tokHist = opts.TokenHist
	}
	if len(opts.DataVitals) > 0 {
		s := Sample{Step: 0, Time: time.Now(), Values: map[string]float64{}}
		for k, v := range opts.DataVitals {
			s.Values[k] = v
		}
		for _, sk := range m.sinks {
			m.keep(sk.WriteSample(&s))
		}
	}
	return m, nil
}

func (m *Monitor) openSinks() error {
	dir := m.opts.RunDir
	if m.cfg.SQLite {
		s, err := OpenStore(rundir.Of(dir).Store())
		if err != nil {
			return err
		}
		keys := make([]string, 0, len(m.opts.RunInfo))
		for k := range m.opts.RunInfo {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			s.SetRunInfo(k, m.opts.RunInfo[k])
		}
		m.sinks = append(m.sinks, s)
	}
	if m.cfg.TensorBoard {
		t, err := NewTFEventsWriter(dir, time.Now())
		if err != nil {
			return err
		}
		m.sinks = append(m.sinks, t)
	}
	if m.cfg.TraceSteps > 0 {
		t, err := NewTraceWriter(rundir.Of(dir).Trace(), int64(m.cfg.TraceFromStep), int64(m.cfg.TraceSteps))
		if err != nil {
			return err
		}
		m.sinks = append(m.sinks, t)
	}
	return nil
}

func (m *Monitor) keep(err error) {
	if err != nil {
		if len(m.errs) < 10 {
			m.errs = append(m.errs, err)
		}
		m.log.Warn("monitor sink", "err", err)
	}
}

// Observe feeds one step. It returns the alerts that fired at this step.
// s.Values may be modified: derived vitals (train_loss_ema, train_ppl,
// grad_clip_rate, dataloader_stall_frac, worst-of-layers values,
// token_kl_drift) are added when the trainer did not report them.
func (m *Monitor) Observe(s Sample) []Alert {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil
	}
	if s.Values == nil {
		s.Values = map[string]float64{}
	}
	if s.Time.IsZero() {
		s.Time = time.Now()
	}
	m.derive(&s)
	m.keepRecent(s)
	for _, sk := range m.sinks {
		m.keep(sk.WriteSample(&s))
	}
	alerts := m.rules.check(&s)
	if g := m.rules.garbage.outside; g != nil && g.step == s.Step {
		m.spikes.noteGarbage(*g)
	}
	norms := classifierInputs(s.Values)
	if x, ok := s.Values["val_loss"]; ok {
		m.spikes.Eval(s.Step, x)
	}
	if isEval(s.Values) {
		alerts = append(alerts, m.rules.eval(s.Step, s.Tokens, s.Values)...)
	}
	loss, ok := s.Values["train_loss_raw"]
	if !ok {
		loss = math.NaN()
	}
	det, dec := m.spikes.Step(s.Step, loss, norms, s.Batch)
	alerts = append(alerts, m.spikeAlerts(&s, det, dec)...)
	alerts = append(alerts, m.liveObserve(&s)...)
	return m.emit(alerts, s.Time)
}

// keepRecent keeps a private copy of s for incident bundles (the last
// IncidentSteps samples, oldest first); once they are that many, the copy
// reuses the map of the sample it evicts, so a step allocates nothing here.
func (m *Monitor) keepRecent(s Sample) {
	var vals map[string]float64
	if n := len(m.recent); n > 0 && n >= m.cfg.IncidentSteps {
		vals = m.recent[0].Values
		clear(vals)
		copy(m.recent, m.recent[1:])
		clear(m.recent[n-1:]) // the evicted sample's batch and phases are not held
		m.recent = m.recent[:n-1]
	}
	if vals == nil {
		vals = make(map[string]float64, len(s.Values))
	}
	for k, v := range s.Values {
		vals[k] = v
	}
	cp := s
	cp.Values = vals
	cp.Histograms = nil
	m.recent = append(m.recent, cp)
	if len(m.recent) > m.cfg.IncidentSteps {
		m.recent = m.recent[len(m.recent)-m.cfg.IncidentSteps:]
	}
}

// Seed replays the history of a run that restarts (a resume, a rewind, an
// automatic rollback) into the rule windows and the spike classifier, so
// that the windowed criteria judge the first steps after the restart
// against the run's own past instead of waiting for new samples.
// history holds the step and evaluation samples before the step training
// restarts from, oldest first (kestrel reads them from metrics.jsonl).
// Nothing fires, nothing is written to the sinks, and the liveness
// watchdogs and throughput windows are left alone (the machine may have
// changed). Call it before the first Observe.
func (m *Monitor) Seed(history []Sample) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return
	}
	m.rules.seeding = true
	defer func() { m.rules.seeding = false }()
	for i := range history {
		s := history[i]
		if s.Values == nil {
			continue
		}
		v := make(map[string]float64, len(s.Values))
		for k, x := range s.Values {
			v[k] = x
		}
		s.Values = v
		m.derive(&s)
		if _, ok := v["train_loss_raw"]; ok {
			m.rules.check(&s)
			m.spikes.Step(s.Step, v["train_loss_raw"], classifierInputs(v), nil)
		}
		if x, ok := v["val_loss"]; ok {
			m.spikes.Eval(s.Step, x)
		}
		if isEval(v) {
			m.rules.eval(s.Step, s.Tokens, v)
		}
	}
	m.spikes.forget()
}

func (m *Monitor) spikeAlerts(s *Sample, det *Spike, dec []*Spike) []Alert {
	var out []Alert
	if det != nil {
		msg := fmt.Sprintf("loss spike at step %d: train_loss_raw %.4g vs window median %.4g (robust z = %.1f); %s",
			det.Step, det.Loss, det.Median, det.Z, det.PrecursorText())
		if det.Batch != nil && len(det.Batch.Sources) > 0 {
			msg += "; batch sources " + listHead(det.Batch.Sources, 8)
		}
		if det.GarbageBatch != "" {
			msg += "; it follows a garbage batch: " + det.GarbageBatch
		}
		m.rules.fire(&out, s, RuleLossSpike, "train_loss_raw", det.Loss, det.BandHi, msg)
		m.spikeSteps = append(m.spikeSteps, det.Step)
		n := 0
		for _, st := range m.spikeSteps {
			if det.Step-st < int64(m.cfg.ClusterWindow) {
				n++
			}
		}
		if m.cfg.SpikeCluster > 0 && n >= m.cfg.SpikeCluster {
			m.rules.fire(&out, s, RuleSpikeCluster, "train_loss_raw", float64(n), float64(m.cfg.SpikeCluster),
				fmt.Sprintf("%d loss spikes within %d steps", n, m.cfg.ClusterWindow))
		}
	}
	for _, sp := range dec {
		out = append(out, m.verdictAlert(sp))
	}
	return out
}

func (m *Monitor) verdictAlert(sp *Spike) Alert {
	a := newAlert(sp.Step, 0, RuleSpikeVerdict, "train_loss_raw", sp.Loss, sp.BandHi, sp.Summary())
	a.Verdict = sp.Verdict
	if sp.Verdict == VerdictRecoverable || sp.Verdict == VerdictArtifact || sp.Verdict == VerdictUndetermined {
		a.Severity, a.Action = SEV2, SEV2.Action()
	}
	return a
}

// derive adds the vitals the monitor can compute from numbers alone.
func (m *Monitor) derive(s *Sample) {
	v := s.Values
	if x, ok := v["train_loss_raw"]; ok && finite(x) {
		if _, has := v["train_loss_ema"]; !has {
			// Bias-corrected EMA.
			b := m.cfg.LossEMABeta
			if math.IsNaN(m.lossEMA) {
				m.lossEMA = 0
			}
			m.lossEMA = b*m.lossEMA + (1-b)*x
			m.emaN++
			v["train_loss_ema"] = m.lossEMA / (1 - math.Pow(b, float64(m.emaN)))
		}
	}
	if x, ok := v["train_loss_ema"]; ok && finite(x) {
		m.lastLoss = x
		if _, has := v["train_ppl"]; !has {
			v["train_ppl"] = math.Exp(x)
		}
	}
	if x, ok := v["val_loss"]; ok && finite(x) {
		if _, has := v["val_ppl"]; !has {
			v["val_ppl"] = math.Exp(x)
		}
		if _, has := v["train_val_gap"]; !has && finite(m.lastLoss) {
			v["train_val_gap"] = x - m.lastLoss
		}
		if e, ok := v["val_loss_ema"]; ok && finite(e) {
			if _, has := v["ema_gap"]; !has {
				v["ema_gap"] = x - e
			}
		}
	}
	m.deriveRates(v)
	deriveAttention(v)
	if m.tokHist != nil {
		if h, ok := s.Histograms["tokens"]; ok {
			v["token_kl_drift"] = KL(h.Counts, m.tokHist)
		}
	}
}

// deriveRates adds the per-step skip flag (from the cumulative
// skipped_updates), grad_clip_rate over the clip rule's window and
// dataloader_stall_frac, where the trainer did not report them.
func (m *Monitor) deriveRates(v map[string]float64) {
	// Skips: a per-step flag, or the increment of the cumulative counter.
	if x, ok := v["skipped_updates"]; ok && finite(x) {
		if _, has := v["skipped"]; !has && finite(m.skips) {
			if x > m.skips {
				v["skipped"] = 1
			} else {
				v["skipped"] = 0
			}
		}
		m.skips = x
	}
	if _, has := v["grad_clip_rate"]; !has {
		if x, ok := v["grad_clipped"]; ok {
			c := 0.0
			if x > 0 {
				c = 1
			}
			// The rules keep the window; derive the rate over it here.
			vals := m.rules.clip.window.values()
			w := m.cfg.Window
			if len(vals) > w-1 {
				vals = vals[len(vals)-(w-1):]
			}
			v["grad_clip_rate"] = (meanOf(vals)*float64(len(vals)) + c) / float64(len(vals)+1)
		}
	}
	if _, has := v["dataloader_stall_frac"]; !has {
		if w, ok := v["data_wait_time"]; ok {
			if st, ok := v["step_time"]; ok && st > 0 {
				v["dataloader_stall_frac"] = w / st
			}
		}
	}
}

// deriveAttention adds the worst-of-layers attention values and the mean
// entropy over heads, where the trainer did not report them.
func deriveAttention(v map[string]float64) {
	worst(v, "max_attn_logit", true)
	worst(v, "attn_entropy", false)
	if _, has := v["attn_entropy_mean"]; !has {
		var sum float64
		n := 0
		for k, x := range v {
			if strings.HasPrefix(k, "attn_entropy/") && strings.Contains(k, "/head") && finite(x) {
				sum += x
				n++
			}
		}
		if n > 0 {
			v["attn_entropy_mean"] = sum / float64(n)
		}
	}
}

// worst sets the unsuffixed name to the max (or min) over its variants when
// the trainer reported only per-layer/head values.
func worst(v map[string]float64, base string, highest bool) {
	if _, ok := v[base]; ok {
		return
	}
	best := math.NaN()
	for n, x := range v {
		if len(n) > len(base) && n[len(base)] == '/' && n[:len(base)] == base && finite(x) {
			if math.IsNaN(best) || (highest && x > best) || (!highest && x < best) {
				best = x
			}
		}
	}
	if !math.IsNaN(best) {
		v[base] = best
	}
}

// KL returns KL(p‖q) in nats of two histograms over the same categories,
// each normalised to sum 1; q is smoothed so empty reference bins do not
// give infinity.
func KL(p, q []float64) float64 {
	n := min(len(p), len(q))
	var sp, sq float64
	for i := 0; i < n; i++ {
		sp += p[i]
		sq += q[i]
	}
	if sp <= 0 || sq <= 0 {
		return math.NaN()
	}
	eps := 1e-10
	var kl float64
	for i := 0; i < n; i++ {
		pi := p[i] / sp
		if pi <= 0 {
			continue
		}
		qi := q[i]/sq*(1-eps*float64(n)) + eps
		kl += pi * math.Log(pi/qi)
	}
	return kl
}

// Record feeds a non-step event (checkpoint, eval, resume) and returns the
// alerts it fired.
func (m *Monitor) Record(e Event) []Alert {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil
	}
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	for _, sk := range m.sinks {
		m.keep(sk.WriteEvent(&e))
	}
	var alerts []Alert
	switch e.Kind {
	case EventCheckpoint:
		if !e.OK {
			msg := fmt.Sprintf("checkpoint at step %d failed", e.Step)
			if e.Path != "" {
				msg += " (" + e.Path + ")"
			}
			if e.Detail != "" {
				msg += ": " + e.Detail
			}
			alerts = append(alerts, newAlert(e.Step, e.Tokens, RuleCheckpointFailed, "checkpoint_ok", 0, 1, msg))
		} else {
			alerts = append(alerts, m.rules.checkpoint(e.Step, e.Tokens, e.Values)...)
		}
	case EventEval:
		if x, ok := e.Values["val_loss"]; ok {
			if _, has := e.Values["train_val_gap"]; !has && finite(m.lastLoss) && finite(x) {
				e.Values["train_val_gap"] = x - m.lastLoss
			}
			m.spikes.Eval(e.Step, x)
		}
		if isEval(e.Values) {
			alerts = append(alerts, m.rules.eval(e.Step, e.Tokens, e.Values)...)
		}
	}
	return m.emit(alerts, e.Time)
}

// ManifestMismatch fires the SEV1 manifest_mismatch with the differences
// between the manifest of the run being resumed and the current one (each
// "field: old → new"; kestrel's trainer lists them with runlog.Manifest.Diff).
func (m *Monitor) ManifestMismatch(step int64, diffs []string) []Alert {
	if len(diffs) == 0 {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	a := newAlert(step, 0, RuleManifest, "manifest_ok", 0, 1, "manifest differs on resume: "+strings.Join(diffs, "; "))
	return m.emit([]Alert{a}, time.Now())
}

// emit writes alerts everywhere and handles SEV0. m.mu is held.
func (m *Monitor) emit(alerts []Alert, t time.Time) []Alert {
	if m.sinksClosed {
		return nil
	}
	for i := range alerts {
		a := &alerts[i]
		a.Time = t
		if a.Severity == SEV0 {
			if dir, err := m.writeIncident(a); err != nil {
				m.keep(fmt.Errorf("incident bundle: %w", err))
			} else {
				a.Evidence = dir
			}
			if m.cfg.PauseOnSEV0 && !m.paused {
				m.paused, m.reason = true, fmt.Sprintf("%s %s at step %d: %s", a.Severity, a.Rule, a.Step, a.Message)
				m.pausedBy = *a
			}
		}
		lvl := slog.LevelWarn
		if a.Severity == SEV0 {
			lvl = slog.LevelError
		}
		attrs := []any{"severity", a.Severity, "rule", a.Rule, "step", a.Step, "msg", a.Message, "action", a.Action}
		if a.Verdict != "" {
			attrs = append(attrs, "verdict", a.Verdict)
		}
		if a.Evidence != "" {
			attrs = append(attrs, "evidence", a.Evidence)
		}
		m.log.Log(context.Background(), lvl, "ALERT", attrs...)
		if m.alertsF != nil {
			_, err := m.alertsF.Write(runlog.AppendAlert(nil, a))
			m.keep(err)
		}
		for _, sk := range m.sinks {
			m.keep(sk.WriteAlert(a))
		}
		if m.cfg.Webhook != "" {
			m.post(*a)
		}
		m.alerts = append(m.alerts, *a)
	}
	return alerts
}

func (m *Monitor) post(a Alert) {
	client := m.opts.HTTPClient
	if client == nil {
		client = &http.Client{Timeout: 5 * time.Second}
	}
	body, err := json.Marshal(a)
	if err != nil {
		m.keep(err)
		return
	}
	m.webhookW.Add(1)
	go func() {
		defer m.webhookW.Done()
		resp, err := client.Post(m.cfg.Webhook, "application/json", bytes.NewReader(body))
		if err != nil {
			m.log.Warn("monitor webhook", "url", m.cfg.Webhook, "err", err)
			return
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			m.log.Warn("monitor webhook", "url", m.cfg.Webhook, "status", resp.Status)
		}
	}()
}

type busySink interface{ Busy() time.Duration }

// BackgroundBusy is the time background sink writers (the SQLite store)
// spent so far, beside the time Observe itself takes.
func (m *Monitor) BackgroundBusy() time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	var d time.Duration
	for _, sk := range m.sinks {
		if b, ok := sk.(busySink); ok {
			d += b.Busy()
		}
	}
	return d
}

// Paused reports whether a SEV0 asked the trainer to stop, and why.
func (m *Monitor) Paused() (bool, string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.paused, m.reason
}

// PausedBy returns the SEV0 alert that asked the trainer to stop (its
// rule, step, message and evidence directory) and whether one did.
func (m *Monitor) PausedBy() (Alert, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.pausedBy, m.paused
}

// Alerts returns every alert fired so far.
func (m *Monitor) Alerts() []Alert {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Alert(nil), m.alerts...)
}

// Flush decides every pending spike with what is known now (for the end
// of a log or of training) and returns the verdict alerts.
func (m *Monitor) Flush() []Alert {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Alert
	for _, sp := range m.spikes.Flush() {
		out = append(out, m.verdictAlert(sp))
	}
	t := time.Now()
	if len(m.recent) > 0 {
		t = m.recent[len(m.recent)-1].Time
	}
	return m.emit(out, t)
}

// Close flushes pending spike verdicts, waits for webhooks and closes
// every sink. It returns the first sink error seen during the run.
func (m *Monitor) Close() error {
	if m == nil {
		return nil
	}
	m.mu.Lock()
	closed := m.closed
	m.closed = true
	m.live.disarm()
	m.mu.Unlock()
	if closed {
		return nil
	}
	m.Flush()
	m.webhookW.Wait()
	m.mu.Lock()
	defer m.mu.Unlock()
	errs := append([]error(nil), m.errs...)
	m.sinksClosed = true
	for _, sk := range m.sinks {
		if err := sk.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	if m.alertsF != nil {
		if err := m.alertsF.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
