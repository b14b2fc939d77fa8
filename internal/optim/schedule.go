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

// BatchSchedule is a piecewise-constant global batch size: entries of
// (start step, batch) sorted by start step, the first starting at step 0.
type BatchSchedule struct {
	Starts  []int
	Batches []int
}

// NewBatchSchedule validates pairs [[start, batch], ...]; an empty list
// means a constant batch of base. Errors name field.
func NewBatchSchedule(field string, pairs [][]int, base int) (BatchSchedule, error) {
	if len(pairs) == 0 {
		if base <= 0 {
			return BatchSchedule{}, fmt.Errorf("%s: batch size must be > 0, got %d", field, base)
		}
		return BatchSchedule{Starts: []int{0}, Batches: []int{base}}, nil
	}
	var bs BatchSchedule
	for i, p := range pairs {
		if len(p) != 2 {
			return bs, fmt.Errorf("%s[%d]: want [start_step, global_batch], got %v", field, i, p)
		}
		if p[1] <= 0 {
			return bs, fmt.Errorf("%s[%d]: global batch must be > 0, got %d", field, i, p[1])
		}
		if i == 0 && p[0] != 0 {
			return bs, fmt.Errorf("%s[0]: the first entry must start at step 0, got %d", field, p[0])
		}
		if i > 0 && p[0] <= bs.Starts[i-1] {
			return bs, fmt.Errorf("%s[%d]: start steps must increase, got %d after %d", field, i, p[0], bs.Starts[i-1])
		}
		bs.Starts = append(bs.Starts, p[0])
		bs.Batches = append(bs.Batches, p[1])
	}
	return bs, nil
}

// At returns the global batch at 0-based step index step.
func (b BatchSchedule) At(step int) int {
	out := b.Batches[0]
	for i, s := range b.Starts {
		if step >= s {
			out = b.Batches[i]
		}
	}
	return out
}

// LRScale is sqrt(B(step)/B0) where B0 is the first batch of the schedule.
func (b BatchSchedule) LRScale(step int) float64 {
	return math.Sqrt(float64(b.At(step)) / float64(b.Batches[0]))
}
