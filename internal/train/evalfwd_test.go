package train

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/model"
)

// TestEvalStatsForwardOnly: validation's forward-only loss is Forward's to
// 1e-6 relative over the same tokens; with a Mask, or a Net without
// LogProbs, it is Forward's own.
func TestEvalStatsForwardOnly(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  model.Config
	}{
		{"bytes-docmask-qknorm", model.Config{Vocab: 256, DModel: 32, NLayers: 2, NHeads: 4, NKVHeads: 2, MLPHidden: 48, SeqLen: 24,
			RopeTheta: 10000, NormEps: 1e-5, QKNorm: true, Tied: true, InitStd: 0.5, DocMask: true}},
		{"bpe-untied", model.Config{Vocab: 3000, DModel: 32, NLayers: 1, NHeads: 2, NKVHeads: 2, MLPHidden: 48, SeqLen: 16,
			RopeTheta: 10000, NormEps: 1e-5, InitStd: 0.3, NoPEEvery: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			net, err := NewModelNet(tc.cfg, 3)
			if err != nil {
				t.Fatal(err)
			}
			r := rand.New(rand.NewPCG(2, 2))
			B, T := 3, tc.cfg.SeqLen
			b := &model.Batch{B: B, T: T, Inputs: make([]int32, B*T), Targets: make([]int32, B*T), SegIDs: make([]int32, B*T)}
			for i := range b.Inputs {
				b.Inputs[i], b.Targets[i], b.SegIDs[i] = int32(r.IntN(tc.cfg.Vocab)), int32(r.IntN(tc.cfg.Vocab)), int32(i%T/5)
			}
			b.Targets[4] = -1
			fw, err := net.Forward(b)
			if err != nil {
				t.Fatal(err)
			}
			got, err := evalStats(net, b)
			if err != nil {
				t.Fatal(err)
			}
			if rel := math.Abs(got.Loss-fw.Loss) / fw.Loss; got.Tokens != fw.Tokens || rel > 1e-6 {
				t.Fatalf("forward-only %v over %d tokens, Forward %v over %d (relative %.3g)", got.Loss, got.Tokens, fw.Loss, fw.Tokens, rel)
			}
			t.Logf("relative difference %.3g", math.Abs(got.Loss-fw.Loss)/fw.Loss)
			plain := struct{ Net }{net} // hides LogProbs
			if st, err := evalStats(plain, b); err != nil || st.Loss != fw.Loss {
				t.Fatalf("Net without LogProbs: %v %v, want Forward's %v", st.Loss, err, fw.Loss)
			}
			b.Mask = make([]float32, B*T)
			for i := range b.Mask {
				b.Mask[i] = float32(i % 2)
			}
			fm, _ := net.Forward(b)
			if st, err := evalStats(net, b); err != nil || st.Loss != fm.Loss || st.Tokens != fm.Tokens {
				t.Fatalf("masked batch: %v over %d (%v), want Forward's %v over %d", st.Loss, st.Tokens, err, fm.Loss, fm.Tokens)
			}
		})
	}
}
