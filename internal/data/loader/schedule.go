package loader

import "fmt"

// BatchStage is one entry of a batch-size schedule: from StartStep on, the
// global batch is Batch sequences per step.
type BatchStage struct {
	StartStep int
	Batch     int
}

// BatchSchedule is a batch-size schedule sorted by StartStep, whose first
// entry starts at step 0. It maps a step to its global sequence indices:
// step s covers [FirstSeq(s), FirstSeq(s)+BatchAt(s)), cumulatively over the
// schedule, so no sequence is skipped or repeated when the batch changes.
type BatchSchedule []BatchStage

// ConstantBatch is the schedule of a fixed global batch.
func ConstantBatch(batch int) BatchSchedule { return BatchSchedule{{0, batch}} }

// Validate checks the schedule.
func (s BatchSchedule) Validate() error {
	if len(s) == 0 {
		return fmt.Errorf("batch schedule is empty")
	}
	if s[0].StartStep != 0 {
		return fmt.Errorf("batch schedule: first entry starts at step %d, want 0", s[0].StartStep)
	}
	for i, e := range s {
		if e.Batch < 1 {
			return fmt.Errorf("batch schedule entry %d: batch %d must be ≥ 1", i, e.Batch)
		}
		if i > 0 && e.StartStep <= s[i-1].StartStep {
			return fmt.Errorf("batch schedule entry %d: start step %d not after %d", i, e.StartStep, s[i-1].StartStep)
		}
	}
	return nil
}

// BatchAt is the global batch of step.
func (s BatchSchedule) BatchAt(step int) int {
	b := s[0].Batch
	for _, e := range s {
		if e.StartStep > step {
			break
		}
		b = e.Batch
	}
	return b
}

// FirstSeq is the global index of the first sequence of step: the sum of the
// batches of steps 0 … step-1.
func (s BatchSchedule) FirstSeq(step int) int64 {
	var g int64
	for i, e := range s {
		if e.StartStep >= step {
			break
		}
		end := step
		if i+1 < len(s) && s[i+1].StartStep < end {
			end = s[i+1].StartStep
		}
		g += int64(end-e.StartStep) * int64(e.Batch)
	}
	return g
}

// StepOf is the step whose batch holds global sequence g.
func (s BatchSchedule) StepOf(g int64) int {
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
