package replicas

import (
	"fmt"

	"github.com/kestrel-lm/kestrel/internal/kernels"
	"github.com/kestrel-lm/kestrel/internal/model"
)

// Scorer is a network that scores a batch (train.Net): Forward, and the
// forward-only path LogProbs where it has one (a model.Model).
type Scorer interface {
	Forward(b *model.Batch) (model.Stats, error)
}

// logProber is a Scorer with the forward-only path.
type logProber interface {
	LogProbs(b *model.Batch, dst []float32) error
}

// Score is the validation pass over one batch: the forward-only path
// (model.LogProbs, no backward activations, no vitals) when net has it and
// the batch carries no Mask, else Forward. Only Loss and Tokens are filled
// then. The loss equals ForwardBackward's bit for bit and Forward's to
// about 1e-8 relative (Forward's log-sum-exp runs the scalar exponential,
// LogProbs the vectorised one of the training head; docs/performance.md);
// it is the same bits on any number of threads.
func Score(net Scorer, b *model.Batch) (model.Stats, error) {
	lp, ok := net.(logProber)
	if !ok || b.Mask != nil {
		return net.Forward(b)
	}
	dst := make([]float32, b.B*b.T)
	if err := lp.LogProbs(b, dst); err != nil {
		return model.Stats{}, fmt.Errorf("validation forward: %w", err)
	}
	loss, n := model.LossFromLogProbs(dst, b.Targets)
	return model.Stats{Loss: loss, Tokens: n}, nil
}

// EvalFill writes forward-only batch k into buf, the batch buffers of the
// replica (or network) that scores it, and returns it.
type EvalFill func(k int, buf Slot) (*model.Batch, error)

// Scored hears batch k's stats, in order of k.
type Scored func(k int, st model.Stats)

// Evaluate scores n batches forward only (Score) and hands their stats to
// done in order of k. With a Set (s non-nil) batch k is filled into and
// scored on replica k mod P, in rounds of P side by side as Run's passes
// run (every replica following replica 0's config and precision first);
// without one (s nil) each batch is filled into buf and scored on net, one
// after the other. Each batch's stats are the same bits either way, so a
// sum over them in order of k is too. A fill error is returned as it is, a
// score's wrapped with its batch.
func Evaluate(s *Set, net Scorer, buf Slot, n int, fill EvalFill, done Scored) error {
	if s == nil {
		for k := 0; k < n; k++ {
			b, err := fill(k, buf)
			if err != nil {
				return err
			}
			st, err := Score(net, b)
			if err != nil {
				return fmt.Errorf("batch %d: %w", k, err)
			}
			done(k, st)
		}
		return nil
	}
	P := len(s.reps)
	for r := 1; r < P; r++ {
		s.reps[r].Follow(s.reps[0])
	}
	t := &s.eval
	t.reps = s.reps
	defer func() { t.batches = t.batches[:0] }()
	for k0 := 0; k0 < n; k0 += P {
		t.batches, t.stats, t.errs = t.batches[:0], t.stats[:0], t.errs[:0]
		for k := k0; k < min(k0+P, n); k++ {
			b, err := fill(k, s.slots[k-k0])
			if err != nil {
				return err
			}
			t.batches, t.stats, t.errs = append(t.batches, b), append(t.stats, model.Stats{}), append(t.errs, nil)
		}
		kernels.ParallelForTask(len(t.batches), 1, t)
		for i := range t.batches {
			if err := t.errs[i]; err != nil {
				return fmt.Errorf("batch %d (replica %d): %w", k0+i, i, err)
			}
		}
		for i, st := range t.stats {
			done(k0+i, st)
		}
	}
	return nil
}

// evalTask scores batch i on replica i.
type evalTask struct {
	reps    []*model.Model
	batches []*model.Batch
	stats   []model.Stats
	errs    []error
}

func (t *evalTask) Run(start, end int) {
	for i := start; i < end; i++ {
		t.stats[i], t.errs[i] = Score(t.reps[i], t.batches[i])
	}
}
