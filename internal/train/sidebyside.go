package train

import (
	"fmt"

	"github.com/kestrel-lm/kestrel/internal/model"
	"github.com/kestrel-lm/kestrel/internal/replicas"
	"github.com/kestrel-lm/kestrel/internal/runlog"
)

// newReplicas is the replica set of train.parallel_micro_batches with
// batch buffers of mb rows (nil: one pass after the other). A
// data-parallel run, a network that is not a model.Model and an MoE
// model fall back to one after the other, with a log line saying why.
func (t *trainer) newReplicas(mb int) *replicas.Set {
	p, mm, why := t.o.Train.ParallelMicroBatches, Model(t.net), ""
	switch {
	case p <= 1:
		return nil
	case t.dp != nil:
		why = "a data-parallel run accumulates in one model (its all-reduce starts inside the last backward pass)"
	case mm == nil:
		why = "the network is not a model.Model"
	}
	var set *replicas.Set
	var err error
	if why == "" {
		if set, err = replicas.New(mm, p, mb, t.T); err != nil {
			why = err.Error()
		}
	}
	if why != "" {
		t.log.Warn("train.parallel_micro_batches: running the micro-batches one after the other", "parallel_micro_batches", p, "why", why)
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
	for r, rows := range st.Rows {
		if st.Sq != nil && rows > 0 {
			t.noise.Direct(st.Sq[r], float64(rows)/float64(a.B), rows)
		}
	}
	t.lastVit = st.Last
	return nil
}
