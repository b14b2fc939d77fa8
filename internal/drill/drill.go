// Package drill runs fire drills on a training config (`kestrel drill`):
// short branches of the user's own run with a fault injected at the
// moments that break naive detectors — early in a fresh run, in warm-up,
// just after a resume or an automatic rollback, in the cooldown, at a data
// stage switch — and reports, per fault and moment, how many steps the
// monitor took to see it, the false alarms before it, the checkpoint the
// rescue went back to and whether it was really from before the fault, and
// how the rescue ended against a clean branch. A rule without a drill is a
// rule nobody has seen fire.
package drill

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/kestrel-lm/kestrel/internal/config"
	"github.com/kestrel-lm/kestrel/internal/faults"
	"github.com/kestrel-lm/kestrel/internal/rewind"
	"github.com/kestrel-lm/kestrel/internal/run"
	"github.com/kestrel-lm/kestrel/internal/rundir"
	"github.com/kestrel-lm/kestrel/internal/runlog"
	"github.com/kestrel-lm/kestrel/internal/train"
	"github.com/kestrel-lm/kestrel/monitor"
)

// Faults, as [debug] injects them (internal/faults).
const (
	FaultLRSpike = "lr_spike"      // one-off: LR ×1000 for one step
	FaultLRHigh  = "lr_high"       // persistent: LR ×100 from the step on, in every trajectory
	FaultPoison  = "poison"        // data: 5 data steps of random tokens
	FaultNaN     = "nan"           // one-off: a NaN loss and gradient
	FaultCorrupt = "corrupt_batch" // data: one batch of random tokens
	FaultStall   = "stall"         // one-off: the step hangs stall seconds
)

// Moments at which a fault is injected.
const (
	MomentFresh    = "fresh"          // step 10 of a fresh run
	MomentWarmup   = "warmup"         // the middle of the LR warm-up
	MomentResume   = "resume"         // 5 steps after a resume
	MomentRollback = "after_rollback" // just after an automatic rollback
	MomentCooldown = "cooldown"       // at 90% of the run, in the LR decay
	MomentStage    = "stage_switch"   // the step a data stage starts
)

// AllFaults and AllMoments are the full matrix, in table order.
var (
	AllFaults  = []string{FaultLRSpike, FaultLRHigh, FaultPoison, FaultNaN, FaultCorrupt, FaultStall}
	AllMoments = []string{MomentFresh, MomentWarmup, MomentResume, MomentRollback, MomentCooldown, MomentStage}
)

// Options configure a drill.
type Options struct {
	// Config is the user's resolved run config; the branches are it, made
	// short (branchConfig).
	Config config.Config
	// Faults and Moments select the matrix (nil: all).
	Faults, Moments []string
	// Steps is each branch's length (default 100).
	Steps int
	// Hog adds a healthy branch beside a CPU hog: busy processes, one per
	// core, started at 40% of the branch (the throughput rules then see
	// the run slow down against its own earlier steps).
	Hog bool
	// Dir holds the branches' run directories (kept); empty: a temporary
	// directory, removed at the end.
	Dir    string
	Logger *slog.Logger
	// Progress, when set, hears each row as its branch ends.
	Progress func(Row)
}

// Row is one branch of the drill.
type Row struct {
	Fault     string `json:"fault"`  // "none" for the healthy branches
	Moment    string `json:"moment"` // "healthy", "healthy+hog" for them
	FaultStep int    `json:"fault_step,omitempty"`
	// Detected: a SEV0/SEV1 alert at or after the fault step; Latency is
	// its step minus the fault step, Rule and Severity its own.
	Detected bool   `json:"detected"`
	Latency  int    `json:"latency_steps"`
	Rule     string `json:"rule,omitempty"`
	Severity string `json:"severity,omitempty"`
	// FalseAlarms are the SEV0/SEV1 alerts before the fault (or in all
	// of a healthy branch), as "rule@step".
	FalseAlarms []string `json:"false_alarms"`
	// LastGood is the step of the checkpoint the rescue went back to (-1:
	// no rollback); LastGoodOK says it was from before the fault.
	LastGood   int  `json:"last_good"`
	LastGoodOK bool `json:"last_good_ok"`
	// Outcome says how the branch ended: "rescued (rung N)", "stopped
	// (rung 3)", "ran through", "stopped: …".
	Outcome string `json:"outcome"`
	Rungs   []int  `json:"rungs,omitempty"`
	// Finished: the branch trained to its last step; FinalVal is then its
	// final val_loss and DeltaPct 100 × (FinalVal − CleanVal) / CleanVal.
	Finished bool    `json:"finished"`
	FinalVal float64 `json:"final_val_loss,omitempty"`
	CleanVal float64 `json:"clean_val_loss"`
	DeltaPct float64 `json:"delta_pct,omitempty"`
	NA       string  `json:"not_applicable,omitempty"` // why the moment does not apply to the config
	Dir      string  `json:"dir,omitempty"`
}

// Report is a drill's result.
type Report struct {
	Steps int   `json:"steps"`
	Rows  []Row `json:"rows"`
}

// Run runs the drill matrix.
func Run(ctx context.Context, o Options) (*Report, error) {
	if o.Steps == 0 {
		o.Steps = 100
	}
	if o.Steps < 40 {
		return nil, fmt.Errorf("drill: --steps %d: a branch needs at least 40 steps (a fault, its detection and a rollback)", o.Steps)
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	faults, moments := o.Faults, o.Moments
	if len(faults) == 0 {
		faults = AllFaults
	}
	if len(moments) == 0 {
		moments = AllMoments
	}
	for _, f := range faults {
		if !slices.Contains(AllFaults, f) {
			return nil, fmt.Errorf("drill: unknown fault %q (want one of %v)", f, AllFaults)
		}
	}
	for _, m := range moments {
		if !slices.Contains(AllMoments, m) {
			return nil, fmt.Errorf("drill: unknown moment %q (want one of %v)", m, AllMoments)
		}
	}
	dir := o.Dir
	if dir == "" {
		tmp, err := os.MkdirTemp("", "kestrel-drill-")
		if err != nil {
			return nil, fmt.Errorf("drill: %w", err)
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("drill: %w", err)
	}
	d := &driller{o: o, dir: dir, clean: map[string]float64{}}
	rep := &Report{Steps: o.Steps}
	emit := func(r Row) {
		rep.Rows = append(rep.Rows, r)
		if o.Progress != nil {
			o.Progress(r)
		}
	}
	healthy, err := d.healthy(ctx, false)
	if err != nil {
		return nil, err
	}
	emit(healthy)
	if o.Hog {
		r, err := d.healthy(ctx, true)
		if err != nil {
			return nil, err
		}
		emit(r)
	}
	for _, m := range moments {
		for _, f := range faults {
			if err := ctx.Err(); err != nil {
				return rep, err
			}
			r, err := d.branch(ctx, f, m)
			if err != nil {
				return rep, err
			}
			emit(r)
		}
	}
	return rep, nil
}

// Failures lists the rows that miss the drill's marks: a fault seen more
// than 3 steps after it or not at all, a false alarm, a rollback to a
// checkpoint from after the fault, or a one-off LR spike or poisoned
// window that the rescue did not carry to the end within 1% of the clean
// branch's final val_loss.
func (rep *Report) Failures() []string {
	var bad []string
	for _, r := range rep.Rows {
		name := r.Fault + "@" + r.Moment
		switch {
		case r.NA != "":
			continue
		case len(r.FalseAlarms) > 0:
			bad = append(bad, name+": false alarms "+strings.Join(r.FalseAlarms, ","))
		case r.Fault == "none":
			continue
		case !r.Detected || r.Latency > 3:
			bad = append(bad, fmt.Sprintf("%s: detected %v, latency %d", name, r.Detected, r.Latency))
		case r.LastGood >= 0 && !r.LastGoodOK:
			bad = append(bad, fmt.Sprintf("%s: rolled back to step %d, after the fault", name, r.LastGood))
		case (r.Fault == FaultLRSpike || r.Fault == FaultPoison) && !r.Finished:
			bad = append(bad, fmt.Sprintf("%s: %s", name, r.Outcome))
		case (r.Fault == FaultLRSpike || r.Fault == FaultPoison) && !(math.Abs(r.DeltaPct) <= 1):
			bad = append(bad, fmt.Sprintf("%s: final val %.4f vs clean %.4f (%+.2f%%)", name, r.FinalVal, r.CleanVal, r.DeltaPct))
		}
	}
	return bad
}

// driller runs the branches of one drill.
type driller struct {
	o     Options
	dir   string
	n     int
	clean map[string]float64 // clean branch's final val_loss by config variant
	step  float64            // the healthy branch's median step_time (s)
}

// stall is the stall fault's length: 20 × the healthy branch's median step
// time, so the watchdog (10 × the median, at least stalled_min_seconds)
// sees it on a config of any speed; at least 3 s.
func (d *driller) stall() float64 { return max(3, 20*d.step) }

// branchConfig is the user's config as a drill branch: steps long, the
// warm-up at most a fifth of it, one evaluation at the end and no in-loop
// benchmarks, a checkpoint every 5 steps (checkpoint.keep as the user set
// it), the monitor pausing on SEV0 without its file sinks, the stall
// watchdog's floor at 1 s, and the rescue ladder on with every trigger
// (the user's skip window, rollback budget and LR factors kept).
func branchConfig(user config.Config, steps int) config.Config {
	c := user
	c.Train.Steps, c.Train.EvalEvery, c.Train.MaxMinutes = steps, steps, 0
	c.Train.ProbeSequences = max(c.Train.ProbeSequences, 4)
	c.Eval.Tasks = nil
	c.Optim.Warmup = min(c.Optim.Warmup, steps/5)
	c.Checkpoint.Every, c.Checkpoint.EveryMinutes, c.Checkpoint.PermanentEvery = 5, 0, 0
	c.Monitor.Enabled, c.Monitor.PauseOnSEV0 = true, true
	c.Monitor.SQLite, c.Monitor.TensorBoard, c.Monitor.TraceSteps = false, false, 0
	c.Monitor.PrometheusAddr, c.Monitor.Webhook = "", ""
	c.Monitor.StalledMinSeconds = 1
	c.Rescue.AutoRollback = true
	c.Rescue.On = []string{rewind.RescueOnDivergence, rewind.RescueOnNaN, rewind.RescueOnDataEvent}
	c.Debug = faults.Default()
	return c
}

// moment is where a fault goes in a branch.
type moment struct {
	step       int    // the fault's step
	resume     int    // stop the branch at this step and resume it (0: no)
	primer     string // a one-off fault at primerStep that causes a rollback first
	primerStep int
	na         string // why the moment does not apply
}

// place puts the moment m into the branch config c (a data stage moved
// into the branch) and says where the fault goes.
func place(c *config.Config, m, fault string) moment {
	L := c.Train.Steps
	switch m {
	case MomentFresh:
		return moment{step: 10}
	case MomentWarmup:
		if w := c.Optim.WarmupSteps(L); w < 4 {
			return moment{na: fmt.Sprintf("warm-up of %d steps", w)}
		}
		return moment{step: c.Optim.WarmupSteps(L) / 2}
	case MomentResume:
		r := 2 * L / 5
		return moment{step: r + 5, resume: r}
	case MomentRollback:
		p := 3 * L / 10
		primer := FaultLRSpike
		if fault == FaultLRSpike {
			primer = FaultNaN
		}
		return moment{step: p + 2, primer: primer, primerStep: p}
	case MomentCooldown:
		return moment{step: 9 * L / 10}
	case MomentStage:
		if len(c.Data.Stages) == 0 {
			return moment{na: "no data.stages"}
		}
		st := L / 2
		shift := st - c.Data.Stages[0].StartStep
		stages := slices.Clone(c.Data.Stages)
		for i := range stages {
			stages[i].StartStep += shift
		}
		c.Data.Stages = stages
		return moment{step: st}
	}
	return moment{na: "unknown moment"}
}

// inject sets fault f at step s (a data fault at data step ds) in c.
// stall is how long the stall fault hangs its step: 20 × the healthy
// branch's median step time (the watchdog fires at 10 ×), at least 3 s.
func inject(c *config.Config, f string, s, ds int, stall float64) {
	d := &c.Debug
	switch f {
	case FaultLRSpike:
		d.LRSpikeAtStep, d.LRSpikeFactor, d.LRSpikeSteps = s, 1000, 1
	case FaultLRHigh:
		d.LRHighFromStep, d.LRHighFactor = s, 100
	case FaultPoison:
		d.PoisonDataAtStep, d.PoisonDataSteps = ds, 5
	case FaultNaN:
		d.NaNAtStep = s
	case FaultCorrupt:
		d.CorruptBatchAtStep = ds
	case FaultStall:
		d.StallAtStep, d.StallSeconds = s, stall
	}
}

func (d *driller) runDir(name string) string {
	d.n++
	return filepath.Join(d.dir, fmt.Sprintf("%02d-%s", d.n, name))
}

// train runs one branch to its end (stopping and resuming it at resume
// when that is > 0).
func (d *driller) train(ctx context.Context, c config.Config, dir string, resume int, extra ...train.Observer) (*train.Result, error) {
	opts := run.Options{Logger: d.o.Logger, Observers: extra}
	if resume > 0 {
		cctx, cancel := context.WithCancel(ctx)
		opts.Observers = append(slices.Clone(extra), stopAt{step: resume, cancel: cancel})
		_, err := run.Train(cctx, c, dir, opts)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("drill: branch %s, first part: %w", dir, err)
		}
		opts.Observers = extra
	}
	return run.Train(ctx, c, dir, opts)
}

// cleanVal is the final val_loss of the clean branch of config c (cached
// by config hash).
func (d *driller) cleanVal(ctx context.Context, c config.Config) (float64, error) {
	h, err := config.Hash(c)
	if err != nil {
		return 0, err
	}
	if v, ok := d.clean[h]; ok {
		return v, nil
	}
	res, err := d.train(ctx, c, d.runDir("clean"), 0)
	if err != nil {
		return 0, fmt.Errorf("drill: the clean branch failed, so the config cannot be drilled: %w", err)
	}
	d.clean[h] = res.ValLoss
	return res.ValLoss, nil
}

// healthy runs the clean branch (beside a CPU hog when hog) and counts its
// SEV0/SEV1 alerts.
func (d *driller) healthy(ctx context.Context, hog bool) (Row, error) {
	c := branchConfig(d.o.Config, d.o.Steps)
	r := Row{Fault: "none", Moment: "healthy", LastGood: -1, Outcome: "ran through", FalseAlarms: []string{}}
	var extra []train.Observer
	if hog {
		r.Moment = "healthy+hog"
		h := &hogFrom{step: 2 * d.o.Steps / 5}
		defer h.stop()
		extra = append(extra, h)
	}
	dir := d.runDir(r.Moment)
	res, err := d.train(ctx, c, dir, 0, extra...)
	if err != nil {
		return r, fmt.Errorf("drill: the healthy branch failed: %w", err)
	}
	if !hog {
		h, _ := config.Hash(c)
		d.clean[h] = res.ValLoss
		d.step = medianStepTime(rundir.Of(dir).Metrics())
	}
	r.Dir, r.Finished, r.FinalVal, r.CleanVal = dir, true, res.ValLoss, res.ValLoss
	alerts, err := readAlerts(dir)
	if err != nil {
		return r, err
	}
	for _, a := range alerts {
		if a.Severity == monitor.SEV0 || a.Severity == monitor.SEV1 {
			r.FalseAlarms = append(r.FalseAlarms, fmt.Sprintf("%s@%d", a.Rule, a.Step))
		}
	}
	return r, nil
}

// branch runs fault f at moment m and judges it.
func (d *driller) branch(ctx context.Context, f, m string) (Row, error) {
	c := branchConfig(d.o.Config, d.o.Steps)
	mo := place(&c, m, f)
	r := Row{Fault: f, Moment: m, FaultStep: mo.step, LastGood: -1, FalseAlarms: []string{}}
	if mo.na != "" {
		r.NA, r.Outcome = mo.na, "n/a"
		return r, nil
	}
	clean, err := d.cleanVal(ctx, c)
	if err != nil {
		return r, err
	}
	r.CleanVal = clean
	ds := mo.step // the data step the fault's step trains on
	if mo.primer != "" {
		inject(&c, mo.primer, mo.primerStep, mo.primerStep, d.stall())
		if f == FaultPoison || f == FaultCorrupt {
			ds += c.Rescue.SkipWindow // the primer's rollback skips skip_window data steps
		}
	}
	inject(&c, f, mo.step, ds, d.stall())
	dir := d.runDir(f + "-" + m)
	r.Dir = dir
	res, runErr := d.train(ctx, c, dir, mo.resume)
	if err := ctx.Err(); err != nil {
		return r, err
	}
	if err := judge(&r, dir, mo, res, runErr); err != nil {
		return r, err
	}
	return r, nil
}

// judge fills r from the branch's alerts, interventions and result.
func judge(r *Row, dir string, mo moment, res *train.Result, runErr error) error {
	alerts, err := readAlerts(dir)
	if err != nil {
		return err
	}
	primer := func(step int64) bool {
		return mo.primer != "" && step >= int64(mo.primerStep) && step <= int64(mo.primerStep+3)
	}
	for _, a := range alerts {
		if a.Severity != monitor.SEV0 && a.Severity != monitor.SEV1 {
			continue
		}
		switch {
		case a.Step < int64(mo.step) && !primer(a.Step):
			r.FalseAlarms = append(r.FalseAlarms, fmt.Sprintf("%s@%d", a.Rule, a.Step))
		case a.Step >= int64(mo.step) && !r.Detected:
			r.Detected, r.Latency, r.Rule, r.Severity = true, int(a.Step)-mo.step, a.Rule, string(a.Severity)
		}
	}
	ivs, err := runlog.ReadInterventions(dir)
	if err != nil {
		return err
	}
	for _, iv := range ivs {
		if iv.By != run.ByAuto || iv.FromStep < mo.step {
			continue // the primer's rollback
		}
		if r.LastGood < 0 {
			r.LastGood, r.LastGoodOK = iv.ToStep, iv.ToStep < mo.step
		}
		r.Rungs = append(r.Rungs, iv.Rung)
	}
	switch {
	case runErr == nil && len(r.Rungs) > 0:
		r.Outcome = fmt.Sprintf("rescued (rung %d)", r.Rungs[len(r.Rungs)-1])
	case runErr == nil:
		r.Outcome = "ran through"
	case strings.Contains(runErr.Error(), "rung 3"):
		r.Outcome = "stopped (rung 3, bundle + RESCUE.md)"
	default:
		r.Outcome = "stopped: " + runErr.Error()
	}
	if runErr == nil && res != nil {
		r.Finished, r.FinalVal = true, res.ValLoss
		r.DeltaPct = 100 * (r.FinalVal - r.CleanVal) / r.CleanVal
	}
	return nil
}

// medianStepTime is the median step_time of a run's metrics.jsonl (0 when
// it has none).
func medianStepTime(path string) float64 {
	var xs []float64
	l, err := runlog.Load(path)
	if err != nil {
		return 0
	}
	for _, v := range l.Column("step_time") {
		if x := float64(v); x > 0 && !math.IsNaN(x) {
			xs = append(xs, x)
		}
	}
	if len(xs) == 0 {
		return 0
	}
	slices.Sort(xs)
	return xs[len(xs)/2]
}

// readAlerts reads a branch's alerts; a torn line (a branch killed while
// it wrote one) is skipped, the others judged.
func readAlerts(dir string) ([]runlog.Alert, error) {
	a, err := runlog.ReadAlerts(rundir.Of(dir).Alerts())
	if errors.Is(err, os.ErrNotExist) || runlog.SkippedLines(err) > 0 {
		return a, nil
	}
	return a, err
}

// stopAt cancels the branch's context after step: the trainer writes an
// interrupt checkpoint there, and the branch resumes from it.
type stopAt struct {
	step   int
	cancel context.CancelFunc
}

func (s stopAt) OnStep(sm *runlog.Step) error {
	if sm.Step >= s.step {
		s.cancel()
	}
	return nil
}
func (stopAt) OnEval(*runlog.Eval) error             { return nil }
func (stopAt) OnCheckpoint(*runlog.Checkpoint) error { return nil }
