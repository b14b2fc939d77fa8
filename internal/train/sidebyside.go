package train

import (
	"fmt"

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
	return set
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
