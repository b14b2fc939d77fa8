package monitor

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/kestrel-lm/kestrel/internal/runlog"
)

// Seed 004's remaining alert gaps: a single evaluation's val-loss jump,
// restart storms, and spike rules that know a planned change of the loss's
// level is coming (a data stage's start_step, a re-warm-up of the LR).

// valJumpRule is val_loss_jump: an evaluation's val_loss exceeds the
// lowest val_loss of the (up to 3) evaluations before it by more than
// max(val_jump, val_jump_frac × that value). Evaluations before a data
// stage's start are no reference for one after it (val_loss then weighs
// another mixture); slow drift over several evaluations is
// val_regression's.
type valJumpRule struct{ ctx *ruleCtx }

func (f *valJumpRule) observeEval(s *Sample, es []evalPoint, out *[]Alert) {
	cfg := f.ctx.cfg
	p, before := es[len(es)-1], es[:len(es)-1]
	if cfg.ValJump <= 0 || !finite(p.val) {
		return
	}
	ref, refStep, n := math.Inf(1), int64(0), 0
	for i := len(before) - 1; i >= 0 && n < 3; i-- {
		e := before[i]
		if !finite(e.val) || e.step >= p.step {
			continue
		}
		if f.ctx.sched.stageStartsIn(e.step, p.step) {
			break
		}
		n++
		if e.val < ref {
			ref, refStep = e.val, e.step
		}
	}
	if n == 0 {
		return
	}
	thr := math.Max(cfg.ValJump, cfg.ValJumpFrac*math.Abs(ref))
	if p.val-ref <= thr {
		return
	}
	msg := fmt.Sprintf("val_loss %.4g at step %d is %.3g nats above %.4g at step %d, the lowest of the last %d evaluations (bound +%.3g; val_ppl %.4g → %.4g): the model got worse between two evaluations",
		p.val, p.step, p.val-ref, ref, refStep, n, thr, math.Exp(ref), math.Exp(p.val))
	if worst, d := worstSlice(before, p); worst != "" {
		msg += fmt.Sprintf("; slice_val_loss/%s moved most (%+.3g)", worst, d)
	}
	f.ctx.fire(out, s, RuleValJump, "val_loss", p.val, ref+thr, msg)
}

// worstSlice names the source whose slice_val_loss rose most since the
// previous evaluation, the last of before.
func worstSlice(before []evalPoint, p evalPoint) (string, float64) {
	if len(before) == 0 {
		return "", 0
	}
	prev := before[len(before)-1]
	best, bestD := "", 0.0
	for src, x := range p.slices {
		y, ok := prev.slices[src]
		if !ok {
			continue
		}
		if d := x - y; d > bestD || d == bestD && best != "" && src < best {
			best, bestD = src, d
		}
	}
	return best, bestD
}

// Starts judges the run's starts — manifest.json's starts, oldest first,
// the last one this start — for restart_storm: restart_storm_starts or
// more of them within restart_storm_minutes up to the last. A start whose
// time does not parse (RFC 3339) is not counted. It returns the alert
// fired at step, if any.
func (m *Monitor) Starts(step int64, starts []runlog.Start) []Alert {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed || m.cfg.RestartStormStarts <= 0 || len(starts) < m.cfg.RestartStormStarts {
		return nil
	}
	var times []time.Time
	var steps []string
	for _, st := range starts {
		if t, err := time.Parse(time.RFC3339, st.Time); err == nil {
			times, steps = append(times, t), append(steps, fmt.Sprintf("%s at step %d", t.Format(time.RFC3339), st.Step))
		}
	}
	if len(times) == 0 {
		return nil
	}
	last := times[len(times)-1]
	span := time.Duration(m.cfg.RestartStormMinutes * float64(time.Minute))
	first := len(times)
	for first > 0 && last.Sub(times[first-1]) <= span {
		first--
	}
	n := len(times) - first
	if n < m.cfg.RestartStormStarts {
		return nil
	}
	msg := fmt.Sprintf("%d starts within %.3g minutes (%s): the run is being restarted again and again", n, last.Sub(times[first]).Minutes(), strings.Join(steps[first:], ", "))
	a := newAlert(step, 0, RuleRestartStorm, "restart_rate", float64(n), float64(m.cfg.RestartStormStarts), msg)
	return m.emit([]Alert{a}, time.Now())
}

// plannedState is what the spike classifier knows of planned changes of
// the loss's level (plannedChange).
type plannedState struct {
	stages         []int64 // start_step of each data stage after the first
	lrPrev, lrPeak float64 // learning_rate of the previous step, its highest so far (NaN = none yet)
	cycle, scale   float64 // lr_cycle and lr_scale of the previous step (NaN = none yet)
	rewarm         bool    // a re-warm-up is under way
	last           int64   // the previous step fed
	started        bool
}

// maxRewarmFactor is the largest rise of learning_rate in one step that a
// re-warm-up read from the LR alone may have: a schedule ramps over
// several steps, an LR spike (a bug, debug.lr_spike_*) jumps at once.
const maxRewarmFactor = 2

// plannedChange re-bases the spike classifier's loss window at a planned
// change of the train loss's level: a data stage's start_step (the loss is
// then measured on another mixture) and a re-warm-up (lr_cycle counting a
// new cycle, a knob's lr_scale turning, or learning_rate ramping up again
// after it fell, by at most maxRewarmFactor a step). The spike rule is
// silent while the LR rises and until its window holds minWindow steps
// after the change; the divergence rule's criteria without history still
// hold meanwhile. A spike at any other step — an LR that jumps at once
// included — is judged as before. v holds the step's learning_rate,
// lr_cycle and lr_scale where the trainer reports them. It returns what
// changed, "" when nothing did.
func (c *SpikeClassifier) plannedChange(step int64, v map[string]float64) string {
	p := &c.plan
	if !p.started {
		p.started, p.lrPrev, p.lrPeak, p.cycle, p.scale, p.last = true, math.NaN(), math.NaN(), math.NaN(), math.NaN(), math.MinInt64
	}
	get := func(n string) float64 {
		if x, ok := v[n]; ok && finite(x) {
			return x
		}
		return math.NaN()
	}
	why := ""
	for _, st := range p.stages {
		if st > p.last && st <= step {
			why = fmt.Sprintf("data stage from step %d", st)
		}
	}
	p.last = step
	if x := get("lr_scale"); finite(x) {
		if finite(p.scale) && x != p.scale {
			why = "lr_scale knob"
		}
		p.scale = x
	}
	lr, cycle := get("learning_rate"), get("lr_cycle")
	if finite(cycle) {
		if finite(p.cycle) && cycle > p.cycle {
			p.rewarm = true
		}
		p.cycle = cycle
	}
	if finite(lr) {
		switch {
		case finite(p.lrPrev) && lr > p.lrPrev*(1+1e-9) && p.lrPrev < p.lrPeak*(1-1e-6) && lr <= maxRewarmFactor*p.lrPrev:
			p.rewarm = true // ramping up again after it fell
		case p.rewarm && finite(p.lrPrev) && lr <= p.lrPrev:
			p.rewarm = false
			why = "end of a learning-rate re-warm-up"
		}
		p.lrPrev = lr
		if !finite(p.lrPeak) || lr > p.lrPeak {
			p.lrPeak = lr
		}
	}
	if p.rewarm && why == "" {
		why = "learning-rate re-warm-up"
	}
	if why != "" {
		c.loss = newRing(c.cfg.Window)
		c.inSpike = false
	}
	return why
}
