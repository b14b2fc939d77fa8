package train

import (
	"fmt"

	"github.com/kestrel-lm/kestrel/internal/kernels"
	"github.com/kestrel-lm/kestrel/internal/model"
	"github.com/kestrel-lm/kestrel/internal/replicas"
	"github.com/kestrel-lm/kestrel/internal/runlog"
)

// newReplicas is the replica set of train.parallel_micro_batches with
// batch buffers of mb rows (nil: one pass after the other; where the
// mode cannot apply, with a log line saying why: replicas.For).
func (t *trainer) newReplicas(mb int) *replicas.Set {
	set, why := replicas.For(Model(t.net), t.o.Train.ParallelMicroBatches, mb, t.T, t.dp != nil)
	if why != "" {
		t.log.Warn("train.parallel_micro_batches: running the micro-batches one after the other", "parallel_micro_batches", t.o.Train.ParallelMicroBatches, "why", why)
	}
	if set != nil {
		if why := sideBySideFit(set.P(), kernels.Threads(), (t.bsched.Max()+mb-1)/mb); why != "" {
			t.log.Warn("train.parallel_micro_batches: "+why, "parallel_micro_batches", set.P(), "threads", kernels.Threads(), "micro_batch", mb, "largest_batch", t.bsched.Max())
		}
	}
	return set
}

// sideBySideFit says what P replicas leave idle with threads threads and
// at most micro micro-batches a step ("" when nothing): the result is the
// same either way, only the speed is not what P promises.
func sideBySideFit(p, threads, micro int) string {
	switch {
	case micro < p:
		return fmt.Sprintf("a step has at most %d micro-batches (train.batch_size / train.micro_batch), so %d of the %d replicas never run: lower it to %d, or train.micro_batch", micro, p-micro, p, micro)
	case threads > p:
		return fmt.Sprintf("the passes run one per thread on %d of the %d threads, the others wait: raise it to %d (with as many micro-batches a step), or set 1 to give each pass every thread", p, threads, threads)
	case threads < p:
		return fmt.Sprintf("%d passes share the %d thread(s): they take turns (the same result, no faster than %d replica(s))", p, threads, threads)
	}
	return ""
}

// sideBySide runs step s's micro-batches on the replicas (replicas.Set.Run:
// rounds of P side by side, the gradients folded into the net's), each
// pass's loss, tokens and QK-Clip observation counted as in micro, and
// the noise scale fed each replica's gradient; nothing without replicas.
func (t *trainer) sideBySide(s, dataIdx, lo, hi int, m *runlog.Step, a *accumulated, qk *qkClipper) error {
	if t.reps == nil {
		return nil
	}
	mb := len(t.inputs) / t.T
	fill := func(k int, buf replicas.Slot) (replicas.Pass, error) {
		n := min(mb, hi-lo-k*mb)
		b, err := t.fill(s, dataIdx, lo+k*mb, n, buf, a)
		return replicas.Pass{Batch: b, Scale: float32(n) / float32(a.B)}, err
	}
	done := func(_ int, p replicas.Pass, st model.Stats, v *model.Vitals) { qk.observe(v); a.add(st, p.Batch.B) }
	st, err := t.reps.Run(m.MicroBatches, fill, done, m.MicroBatches > 1 && t.noise != nil)
	if err != nil {
		return fmt.Errorf("step %d: %w", s, err)
	}
	m.Spans = append(m.Spans, st.Spans...)
	m.DataWaitTime, m.ForwardTime, m.BackwardTime = st.Data.Seconds(), st.Forward.Seconds(), st.Backward.Seconds()
	for r, sq := range st.Sq { // a replica without rows measures nothing
		t.noise.Direct(sq, float64(st.Rows[r])/float64(a.B), st.Rows[r])
	}
	t.lastVit = st.Last
	return nil
}

// evalReps is the replica set valLoss scores the validation batches on
// side by side (replicas.Evaluate; nil: one after the other, the same bits).
func (t *trainer) evalReps() *replicas.Set {
	if !sideBySideEval {
		return nil
	}
	return t.reps
}

// sideBySideEval lets a test force the sequential evaluation to compare.
var sideBySideEval = true
