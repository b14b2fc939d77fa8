package optim

import (
	"errors"
	"fmt"
	"math"
	"slices"
)

// Phase is one entry of [[optim.phases]]: from metrics step Step (1-based)
// on, the phase sets the learning rate, starting from the LR in force at
// the step before, until the next entry's step. Entries are in increasing
// step order; before the first one optim.schedule (with its warm-up and
// rewarm_at cycles) is in force.
type Phase struct {
	Step           int      `toml:"step" comment:"metrics step (1-based, >= 2) at which this phase takes over the LR"`
	Kind           string   `toml:"kind" comment:"rewarm (ramp over steps to peak, then hold it) | decay (from the LR in force to 'to' over steps, shape) | hold (keep the LR in force) | wsds (WSD-S from here: stable at peak, the last wsds_decay_steps of every wsds_period decaying to 'to')"`
	From           string   `toml:"from,omitempty" comment:"rewarm: ramp from the LR in force (current, the default) or from optim.min_lr (min_lr)"`
	Peak           *float64 `toml:"peak,omitempty" comment:"rewarm: the new peak (default optim.lr); wsds: the LR of its stable stretches (default the peak in force: optim.lr or the last rewarm's)"`
	To             *float64 `toml:"to,omitempty" comment:"decay, wsds: the LR at the end of a decay (default optim.min_lr)"`
	Steps          int      `toml:"steps,omitempty" comment:"rewarm: length of the ramp; decay: length of the decay (>= 1; the phase holds its end value after it)"`
	Shape          string   `toml:"shape,omitempty" comment:"decay, wsds: linear | cosine | 1-sqrt (default optim.decay_shape)"`
	WSDSPeriod     int      `toml:"wsds_period,omitempty" comment:"wsds: steps from one short decay to the next, counted from this phase's step"`
	WSDSDecaySteps int      `toml:"wsds_decay_steps,omitempty" comment:"wsds: length of the short decay at the end of every period (<= wsds_period)"`
}

// phaseStart is a phase resolved against the schedule before it: where it
// starts (0-based), the LR in force at the step before, the peak in force
// and the re-warmup cycle.
type phaseStart struct {
	Phase
	b     int     // 0-based step index of its first step
	from  float64 // LR in force at b-1
	peak  float64 // peak this phase holds or decays from
	lo    float64 // to, or optim.min_lr
	shape string
	cycle int
}

// startPhases resolves the phases in order: each one's starting LR is the
// schedule's at the step before it, which earlier phases already set.
func (s *Schedule) startPhases() error {
	c := s.cfg
	peak := c.LR
	for i, p := range c.Phases {
		if p.Step > s.total {
			return fmt.Errorf("optim.phases[%d].step (%d) is after the run's last step (train.steps = %d)", i, p.Step, s.total)
		}
		prev := s.At(p.Step - 2)
		ps := phaseStart{Phase: p, b: p.Step - 1, from: prev.LR, peak: peak, lo: c.MinLR, shape: c.DecayShape, cycle: prev.Cycle}
		if p.To != nil {
			ps.lo = *p.To
		}
		if p.Shape != "" {
			ps.shape = p.Shape
		}
		switch p.Kind {
		case "rewarm":
			ps.peak, ps.cycle = c.LR, prev.Cycle+1
			if p.Peak != nil {
				ps.peak = *p.Peak
			}
			if p.From == "min_lr" {
				ps.from = c.MinLR
			}
		case "wsds":
			if p.Peak != nil {
				ps.peak = *p.Peak
			}
		}
		peak = ps.peak
		s.phases = append(s.phases, ps)
	}
	return nil
}

// phaseAt is the index of the phase in force at 0-based step, or -1 when
// optim.schedule still is.
func (s *Schedule) phaseAt(step int) int {
	k := -1
	for i := range s.phases {
		if step >= s.phases[i].b {
			k = i
		}
	}
	return k
}

// at is the phase's point at 0-based step (at or after its start).
func (p *phaseStart) at(c Config, step int) Point {
	t := step - p.b
	pt := Point{Cycle: p.cycle}
	switch p.Kind {
	case "rewarm":
		pt.LR, pt.Phase = p.peak, "stable"
		if t < p.Steps {
			pt.LR, pt.Phase = p.from+(p.peak-p.from)*float64(t+1)/float64(p.Steps+1), "rewarm"
		}
	case "decay":
		pt.LR, pt.Phase = decay(p.shape, p.from, p.lo, frac(t+1, p.Steps)), "decay"
	case "hold":
		pt.LR, pt.Phase = p.from, "hold"
	case "wsds":
		pt.LR, pt.Phase = wsds(p.shape, p.peak, p.lo, t, p.WSDSPeriod, p.WSDSDecaySteps)
	}
	return pt
}

// validatePhases checks [[optim.phases]], naming each bad field as
// optim.phases[i].key.
func (c Config) validatePhases() error {
	var errs []error
	bad := func(i int, key, f string, args ...any) {
		errs = append(errs, fmt.Errorf("optim.phases[%d].%s "+f, append([]any{i, key}, args...)...))
	}
	lrOK := func(v float64) bool { return v >= 0 && !math.IsInf(v, 0) && !math.IsNaN(v) }
	for i, p := range c.Phases {
		if p.Step < 2 {
			bad(i, "step", "must be >= 2 (a phase starts from the LR of the step before), got %d", p.Step)
		} else if i > 0 && p.Step <= c.Phases[i-1].Step {
			bad(i, "step", "must be after optim.phases[%d].step (%d), got %d: entries are in increasing step order", i-1, c.Phases[i-1].Step, p.Step)
		}
		if i > 0 {
			if q := c.Phases[i-1]; (q.Kind == "rewarm" || q.Kind == "decay") && q.Steps > 0 && q.Step+q.Steps > p.Step {
				bad(i, "step", "(%d) overlaps optim.phases[%d] (%s over steps %d..%d): a phase starts after the ramp before it ends", p.Step, i-1, q.Kind, q.Step, q.Step+q.Steps-1)
			}
		}
		if len(c.RewarmAt) > 0 && i == 0 && c.RewarmAt[len(c.RewarmAt)-1] >= p.Step-1 {
			bad(i, "step", "(%d): optim.rewarm_at %v re-warms at or after it; from the first phase on the phases alone set the LR (use a kind = \"rewarm\" phase)", p.Step, c.RewarmAt)
		}
		ramp := p.Kind == "rewarm" || p.Kind == "decay"
		hasShape := p.Kind == "decay" || p.Kind == "wsds"
		switch p.Kind {
		case "rewarm", "decay", "hold", "wsds":
		default:
			bad(i, "kind", "%q is not a phase (want rewarm, decay, hold or wsds)", p.Kind)
			continue
		}
		switch {
		case p.From != "" && p.Kind != "rewarm":
			bad(i, "from", "is for kind = \"rewarm\" only, got it on %q", p.Kind)
		case p.From != "" && p.From != "current" && p.From != "min_lr":
			bad(i, "from", "%q: want current (the LR in force) or min_lr", p.From)
		}
		if p.Peak != nil {
			switch {
			case p.Kind != "rewarm" && p.Kind != "wsds":
				bad(i, "peak", "is for kind = \"rewarm\" or \"wsds\" only, got it on %q", p.Kind)
			case !lrOK(*p.Peak) || *p.Peak <= 0:
				bad(i, "peak", "must be a finite number > 0, got %g", *p.Peak)
			case *p.Peak < c.MinLR:
				bad(i, "peak", "(%g) is below optim.min_lr (%g)", *p.Peak, c.MinLR)
			}
		}
		if p.To != nil {
			switch {
			case !hasShape:
				bad(i, "to", "is for kind = \"decay\" or \"wsds\" only, got it on %q", p.Kind)
			case !lrOK(*p.To):
				bad(i, "to", "must be a finite number >= 0, got %g", *p.To)
			}
		}
		switch {
		case ramp && p.Steps < 1:
			bad(i, "steps", "must be >= 1 for kind = %q, got %d", p.Kind, p.Steps)
		case !ramp && p.Steps != 0:
			bad(i, "steps", "is for kind = \"rewarm\" or \"decay\" only, got %d on %q", p.Steps, p.Kind)
		}
		switch {
		case p.Shape != "" && !hasShape:
			bad(i, "shape", "is for kind = \"decay\" or \"wsds\" only, got it on %q", p.Kind)
		case p.Shape != "" && !slices.Contains([]string{"linear", "cosine", "1-sqrt"}, p.Shape):
			bad(i, "shape", "%q: want linear, cosine or 1-sqrt", p.Shape)
		}
		if p.Kind == "wsds" {
			if p.WSDSPeriod <= 0 || p.WSDSDecaySteps <= 0 || p.WSDSDecaySteps > p.WSDSPeriod {
				bad(i, "wsds_period", "(%d) and wsds_decay_steps (%d) must be > 0 with decay <= period", p.WSDSPeriod, p.WSDSDecaySteps)
			}
		} else if p.WSDSPeriod != 0 || p.WSDSDecaySteps != 0 {
			bad(i, "wsds_period", "and wsds_decay_steps are for kind = \"wsds\" only, got them on %q", p.Kind)
		}
	}
	return errors.Join(errs...)
}

// CheckPhasesKeepPast refuses a change of the phases from old to new that
// would change the LR of a step already trained, steps 1..done (a rewind to
// the checkpoint of step done): every phase starting at or before done must
// be in both and unchanged (its ramp or period too: the steps it set are in
// the past). A new phase starts at done+1 or later.
func CheckPhasesKeepPast(old, new Config, done int) error {
	past := func(ps []Phase) []Phase {
		var out []Phase
		for _, p := range ps {
			if p.Step <= done {
				out = append(out, p)
			}
		}
		return out
	}
	o, n := past(old.Phases), past(new.Phases)
	for i := range max(len(o), len(n)) {
		switch {
		case i < len(o) && i < len(n) && n[i].Step < o[i].Step:
			return fmt.Errorf("optim.phases: the entry at step %d starts at or before the rewind point (step %d): it would change steps already trained; start it at step %d or later", n[i].Step, done, done+1)
		case i < len(o) && i < len(n) && n[i].Step > o[i].Step:
			return fmt.Errorf("optim.phases: the entry at step %d (%s) is gone, but the steps up to the rewind point (step %d) trained with it; keep it and add phases after step %d", o[i].Step, o[i].Kind, done, done)
		case i >= len(o):
			return fmt.Errorf("optim.phases: the entry at step %d starts at or before the rewind point (step %d): it would change steps already trained; start it at step %d or later", n[i].Step, done, done+1)
		case i >= len(n):
			return fmt.Errorf("optim.phases: the entry at step %d (%s) is gone, but the steps up to the rewind point (step %d) trained with it; keep it and add phases after step %d", o[i].Step, o[i].Kind, done, done)
		case !samePhase(o[i], n[i]):
			return fmt.Errorf("optim.phases: the entry at step %d changed (the run's %v, now %v), but it starts at or before the rewind point (step %d): it would change steps already trained; add a phase at step %d or later instead", n[i].Step, show(o[i]), show(n[i]), done, done+1)
		}
	}
	return nil
}

func samePhase(a, b Phase) bool {
	eq := func(x, y *float64) bool { return (x == nil) == (y == nil) && (x == nil || *x == *y) }
	return a.Step == b.Step && a.Kind == b.Kind && a.From == b.From && eq(a.Peak, b.Peak) && eq(a.To, b.To) &&
		a.Steps == b.Steps && a.Shape == b.Shape && a.WSDSPeriod == b.WSDSPeriod && a.WSDSDecaySteps == b.WSDSDecaySteps
}

// show is a phase without pointers, for messages.
func show(p Phase) map[string]any {
	m := map[string]any{"step": p.Step, "kind": p.Kind}
	if p.Peak != nil {
		m["peak"] = *p.Peak
	}
	if p.To != nil {
		m["to"] = *p.To
	}
	for k, v := range map[string]int{"steps": p.Steps, "wsds_period": p.WSDSPeriod, "wsds_decay_steps": p.WSDSDecaySteps} {
		if v != 0 {
			m[k] = v
		}
	}
	for k, v := range map[string]string{"from": p.From, "shape": p.Shape} {
		if v != "" {
			m[k] = v
		}
	}
	return m
}
