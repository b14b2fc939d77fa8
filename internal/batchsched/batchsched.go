// Package batchsched is kestrel's one batch-size schedule: the trainer
// reads the global batch and the sqrt batch LR scale from it, the loader
// the global sequence indices of each step. It imports nothing of the
// project, so both can use it without importing each other.
//
// Step numbering. In config (train.batch_schedule, like
// data.stages[].start_step) a step is a metrics step: the "step" of
// metrics.jsonl and of the logs, counted from 1, so an entry [S, B] takes
// effect at metrics step S. In code (Schedule's methods, the loader's Fill,
// datasrc.Source) a step is the 0-based step index, metrics step − 1.
// FromConfig is the one place that converts.
package batchsched

import (
	"fmt"
	"math"
)

// Stage is one entry of a schedule: from step index Start on, the global
// batch is Batch sequences per step.
type Stage struct {
	Start int // 0-based step index (metrics step Start+1)
	Batch int
}

// Schedule is a piecewise-constant global batch, sorted by Start, whose
// first stage starts at index 0. Step index s covers the global sequences
// [FirstSeq(s), FirstSeq(s)+At(s)), numbered cumulatively over the
// schedule, so no sequence is skipped or repeated when the batch changes.
type Schedule []Stage

// Constant is the schedule of a fixed global batch.
func Constant(batch int) Schedule { return Schedule{{0, batch}} }

// FromConfig builds the schedule of train.batch_schedule-style pairs
// [[start_step, batch], ...], whose start steps are metrics steps (from 1;
// the first entry starts at step 1, later ones strictly after the one
// before); an empty list is a constant batch of base. Errors name field
// and the entry, e.g. "train.batch_schedule[1]: …".
func FromConfig(field string, pairs [][]int, base int) (Schedule, error) {
	if len(pairs) == 0 {
		if base <= 0 {
			return nil, fmt.Errorf("%s is empty and the batch size is %d: want a batch > 0", field, base)
		}
		return Constant(base), nil
	}
	s := make(Schedule, 0, len(pairs))
	for i, p := range pairs {
		if len(p) != 2 {
			return nil, fmt.Errorf("%s[%d]: want [start_step, global_batch], got %v", field, i, p)
		}
		start, batch := p[0], p[1]
		if batch <= 0 {
			return nil, fmt.Errorf("%s[%d]: global batch must be > 0, got %d", field, i, batch)
		}
		if start < 1 {
			return nil, fmt.Errorf("%s[%d]: start step %d: steps are numbered from 1, as in metrics.jsonl", field, i, start)
		}
		if i == 0 && start != 1 {
			return nil, fmt.Errorf("%s[0]: the first entry must start at step 1, got %d", field, start)
		}
		if i > 0 && start-1 <= s[i-1].Start {
			return nil, fmt.Errorf("%s[%d]: start steps must increase, got %d after %d", field, i, start, s[i-1].Start+1)
		}
		s = append(s, Stage{Start: start - 1, Batch: batch})
	}
	return s, nil
}

// Validate checks a schedule built by hand.
func (s Schedule) Validate() error {
	if len(s) == 0 {
		return fmt.Errorf("batch schedule is empty")
	}
	if s[0].Start != 0 {
		return fmt.Errorf("batch schedule: first entry starts at step index %d, want 0", s[0].Start)
	}
	for i, e := range s {
		if e.Batch < 1 {
			return fmt.Errorf("batch schedule entry %d: batch %d must be ≥ 1", i, e.Batch)
		}
		if i > 0 && e.Start <= s[i-1].Start {
			return fmt.Errorf("batch schedule entry %d: start index %d not after %d", i, e.Start, s[i-1].Start)
		}
	}
	return nil
}

// At is the global batch of step index step.
func (s Schedule) At(step int) int {
	b := s[0].Batch
	for _, e := range s {
		if e.Start > step {
			break
		}
		b = e.Batch
	}
	return b
}

// Max is the largest global batch of the schedule.
func (s Schedule) Max() int {
	m := 0
	for _, e := range s {
		m = max(m, e.Batch)
	}
	return m
}

// LRScale is sqrt(At(step)/B0), B0 the first batch of the schedule.
func (s Schedule) LRScale(step int) float64 {
	return math.Sqrt(float64(s.At(step)) / float64(s[0].Batch))
}

// FirstSeq is the global index of the first sequence of step index step:
// the sum of the batches of step indices 0 … step-1.
func (s Schedule) FirstSeq(step int) int64 {
	var g int64
	for i, e := range s {
		if e.Start >= step {
			break
		}
		end := step
		if i+1 < len(s) && s[i+1].Start < end {
			end = s[i+1].Start
		}
		g += int64(end-e.Start) * int64(e.Batch)
	}
	return g
}

// StepOf is the step index whose batch holds global sequence g.
func (s Schedule) StepOf(g int64) int {
	lo, hi := 0, 1
	for s.FirstSeq(hi) <= g {
		lo, hi = hi, hi*2
	}
	for hi-lo > 1 { // FirstSeq(lo) ≤ g < FirstSeq(hi)
		mid := (lo + hi) / 2
		if s.FirstSeq(mid) <= g {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}
