package train

import (
	"context"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/model"
)

// TestBenchStep times a tiny model: the loss falls on a fixed random batch,
// the rates are positive and consistent, and bad options are errors.
func TestBenchStep(t *testing.T) {
	cfg := model.Config{Vocab: 64, DModel: 16, NLayers: 1, NHeads: 2, NKVHeads: 2, MLPHidden: 32, SeqLen: 8, RopeTheta: 10000, NormEps: 1e-5, InitStd: 0.02}
	r, err := BenchStep(context.Background(), StepBenchOptions{Model: cfg, Batch: 2, Steps: 5, Warmup: 1, PeakGFLOPS: 100})
	if err != nil {
		t.Fatal(err)
	}
	if r.Steps != 5 || r.Batch != 2 || r.Seq != 8 || !(r.TokensPerSec > 0) || !(r.MFU > 0) || !(r.LossLast < r.LossFirst) {
		t.Fatalf("%+v", r)
	}
	if got := float64(r.Batch*r.Seq) / r.StepSec; got != r.TokensPerSec {
		t.Errorf("tokens/s %v, batch·seq/step %v", r.TokensPerSec, got)
	}
	if got := r.TokensPerSec * r.FLOPsPerToken / 100e9; r.PeakGFLOPS != 100 || r.PeakSource != "configured" || got != r.MFU {
		t.Errorf("peak %v from %q, mfu %v; want 100 configured, mfu %v", r.PeakGFLOPS, r.PeakSource, r.MFU, got)
	}
	for _, bad := range []StepBenchOptions{{Model: cfg, Batch: 1}, {Model: cfg, Steps: 1}} {
		if _, err := BenchStep(context.Background(), bad); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}
