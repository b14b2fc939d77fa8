package optim

import (
	"fmt"
	"math"
)

// Point is the schedule's value at one step.
type Point struct {
	LR    float64 // learning rate before batch scaling and debug factors
	Phase string  // warmup | rewarm | stable | decay | constant
	Cycle int     // index of the re-warmup cycle (0 before the first rewarm_at)
}

// Schedule maps a 0-based step index (the number of optimizer steps already
// taken) to a learning rate. It is a pure function of the config and the
// total step count, so resuming needs only the step.
type Schedule struct {
	cfg    Config
	total  int
	bounds []int // cycle starts: 0 then rewarm_at entries below total
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
	return &Schedule{cfg: cfg, total: total, bounds: b}, nil
}

// At returns the schedule at 0-based step index step.
func (s *Schedule) At(step int) Point {
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
	W, warmName := c.Warmup, "warmup"
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
		q := (t - W) % c.WSDSPeriod
		if ds := c.WSDSPeriod - c.WSDSDecaySteps; q >= ds {
			p.LR = decay(c.DecayShape, peak, lo, frac(q-ds+1, c.WSDSDecaySteps))
			p.Phase = "decay"
		}
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
