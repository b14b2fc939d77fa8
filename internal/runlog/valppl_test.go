package runlog

import (
	"math"
	"testing"
)

// TestEvalRecordsValPPL: an evaluation's line carries val_ppl =
// exp(val_loss) (seed 004's val_ppl).
func TestEvalRecordsValPPL(t *testing.T) {
	v := Values(&Eval{Step: 10, ValLoss: 2, ValLossEMA: math.NaN(), FixedProbeLoss: math.NaN(), LogitEntropyProbe: math.NaN(), TopKMassProbe: math.NaN()}, nil)
	if got := v["val_ppl"]; math.Abs(got-math.Exp(2)) > 1e-12 {
		t.Fatalf("val_ppl %v, want e² = %v (values %v)", got, math.Exp(2), v)
	}
}
