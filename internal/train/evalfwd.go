package train

import (
	"fmt"

	"github.com/kestrel-lm/kestrel/internal/model"
)

// logProber is a Net with the forward-only evaluation path (modelNet).
type logProber interface {
	LogProbs(b *model.Batch, dst []float32) error
}

// evalStats is the validation pass over one batch: the forward-only path
// (model.LogProbs, no backward activations, no vitals) when net has it and
// the batch carries no Mask, else Forward. Only Loss and Tokens are filled
// then. The loss equals ForwardBackward's bit for bit and Forward's to
// about 1e-8 relative (Forward's log-sum-exp runs the scalar exponential,
// LogProbs the vectorised one of the training head; docs/performance.md).
func evalStats(net Net, b *model.Batch) (model.Stats, error) {
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
