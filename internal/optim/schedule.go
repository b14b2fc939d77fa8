package optim

import (
	"fmt"
	"math"
)

// Point is the schedule's value at one step.
type Point struct {
	LR    float64 // learning rate before batch scaling and debug factors
	Phase string  // warmup | rewarm | stable | decay | constant | stepN | hold
	Cycle int     // index of the re-warmup cycle (0 before the first rewarm_at or rewarm phase)
	Entry int     // 1-based index of the [[optim.phases]] entry in force (0: optim.schedule)
}

// Schedule maps a 0-based step index (the number of optimizer steps already
// taken) to a learning rate. It is a pure function of the config and the
// total step count, so resuming needs only the step.
//
// Up to the first [[optim.phases]] entry the LR is optim.schedule's (with
// its warm-up and rewarm_at cycles); from each phase's step on, the phase
// sets it, starting from the LR in force at the step before (phases.go).
type Schedule struct {
	cfg    Config
	total  int
	warmup int   // warm-up steps in force (optim.warmup_steps or warmup_fraction of total)
	bounds []int // cycle starts: 0 then rewarm_at entries below total
	phases []phaseStart
}

// NewSchedule builds the schedule for a run of total steps.
func NewSchedule(cfg Config, total int) (*Schedule, error) {
	if total <= 0 {
		return nil, fmt.Errorf("schedule: total steps must be > 0, got %d", total)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	b := []int{0}
	for _, s := range cfg.RewarmAt {
		if s < total {
			b = append(b, s)
		}
	}
	s := &Schedule{cfg: cfg, total: total, warmup: cfg.WarmupSteps(total), bounds: b}
	if err := s.startPhases(); err != nil {
		return nil, err
	}
	return s, nil
}

// WarmupSteps is the warm-up length in force for a run of total steps:
// optim.warmup_fraction of total (rounded) when it is set, else
// optim.warmup_steps (Validate refuses both set).
func (c Config) WarmupSteps(total int) int {
	if c.WarmupFraction > 0 {
		return int(math.Round(c.WarmupFraction * float64(total)))
	}
	return c.Warmup
}

// At returns the schedule at 0-based step index step.
func (s *Schedule) At(step int) Point {
	if k := s.phaseAt(step); k >= 0 {
		p := s.phases[k].at(s.cfg, step)
		p.Entry = k + 1
		return p
	}
	return s.baseAt(step)
}

// baseAt is optim.schedule's point at step, as if there were no phases.
func (s *Schedule) baseAt(step int) Point {
	c := s.cfg
	cyc := 0
	for i, b := range s.bounds {
		if step >= b {
			cyc = i
		}
	}
	start := s.bounds[cyc]
	end := s.total
	if cyc+1 < len(s.bounds) {
		end = s.bounds[cyc+1]
	}
	L := end - start
	t := step - start
	W, warmName := s.warmup, "warmup"
	if cyc > 0 {
		W, warmName = c.RewarmSteps, "rewarm"
	}
	if W >= L {
		W = L - 1
	}
	if t < W {
		return Point{LR: c.LR * float64(t+1) / float64(W+1), Phase: warmName, Cycle: cyc}
	}
	peak, lo := c.LR, c.MinLR
	p := Point{LR: peak, Phase: "stable", Cycle: cyc}
	switch c.Schedule {
	case "constant":
		p.Phase = "constant"
	case "cosine":
		f := frac(t-W, L-1-W)
		p.LR = lo + 0.5*(peak-lo)*(1+math.Cos(math.Pi*f))
		p.Phase = "decay"
	case "wsd":
		D := int(math.Round(c.DecayFraction * float64(L-W)))
		if ds := L - D; t >= ds && D > 0 {
			p.LR = decay(c.DecayShape, peak, lo, frac(t-ds+1, D))
			p.Phase = "decay"
		}
	case "wsd-s":
		p.LR, p.Phase = wsds(c.DecayShape, peak, lo, t-W, c.WSDSPeriod, c.WSDSDecaySteps)
	case "multistep":
		for i, at := range c.MultistepAt {
			if t >= int(math.Round(at*float64(L))) {
				p.LR = peak * c.MultistepFactors[i]
				p.Phase = fmt.Sprintf("step%d", i+1)
			}
		}
	}
	return p
}

// wsds is WSD-S t steps into its first period: the peak, except the last
// decaySteps of every period, which decay from peak to lo.
func wsds(shape string, peak, lo float64, t, period, decaySteps int) (float64, string) {
	q := t % period
	if ds := period - decaySteps; q >= ds {
		return decay(shape, peak, lo, frac(q-ds+1, decaySteps)), "decay"
	}
	return peak, "stable"
}

func frac(a, b int) float64 {
	if b <= 0 {
		return 1
	}
	f := float64(a) / float64(b)
	return math.Min(1, math.Max(0, f))
}

// decay interpolates from peak (f=0) to lo (f=1) with the given shape.
func decay(shape string, peak, lo, f float64) float64 {
	switch shape {
	case "1-sqrt":
		return lo + (peak-lo)*(1-math.Sqrt(f))
	case "cosine":
		return lo + 0.5*(peak-lo)*(1+math.Cos(math.Pi*f))
	}
	return peak - (peak-lo)*f
}
