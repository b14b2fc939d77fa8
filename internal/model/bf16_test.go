package model

import (
	"math"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/kernels/ops"
)

// bf16GradTol bounds ‖g_bf16 − g_fp32‖/‖g_fp32‖ per tensor. Rounding a
// product's input to bf16 (round to nearest even, 8 significant bits) moves
// it by at most u = 2⁻⁹ relative, so each term of a product of two rounded
// inputs is off by at most 2u = 2⁻⁸. A gradient of the tiny model passes
// through up to 16 products in sequence (2 layers × qkv, scores, P·V,
// o_proj, gate_up, down forward, the lm_head, and the transposed products
// backward): 16 · 2⁻⁸ = 2⁻⁴ if every error added up in the same direction.
// Gradients that are differences of near-equal terms (the norms' gains, the
// QK-norm gains and the k projection under them, with init_std 0.3 making
// the attention sharp) amplify that by a small factor: the measured worst
// tensor is 0.037 (k_proj of "all-options"), the rest ≤ 0.035. The bound is
// twice the sequential worst case, 2⁻³; bf16GradFloor also asserts the
// difference is there at all, so a pass that left bf16 out fails.
const bf16GradTol = 1.0 / 8

// bf16GradFloor: below this relative difference a tensor's gradient did
// not go through bf16 products (float32 reordering alone is ~2⁻²³).
const bf16GradFloor = 1e-5

// TestBF16GradsNearFP32: the gradients of a bf16 pass stay within
// bf16GradTol of the float32 gradients of the same weights and batch,
// tensor by tensor, and differ from them (every product did round). The
// head width 32 case is the one where fp32 attention runs on the AVX-512
// tiles: bf16 must leave them.
func TestBF16GradsNearFP32(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(*Config)
	}{
		{"all-options", func(*Config) {}},
		{"plain-untied", func(c *Config) {
			c.QKNorm, c.Tied, c.NoPEEvery, c.ZLoss, c.DocMask, c.NKVHeads = false, false, 0, 0, false, 4
		}},
		{"head-width-32", func(c *Config) { c.DModel, c.NHeads, c.NKVHeads, c.SeqLen = 64, 2, 2, 16 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tinyConfig()
			tc.mod(&cfg)
			grads := func(p ops.Precision) ([]float32, float64) {
				m, err := New(cfg, 1)
				if err != nil {
					t.Fatal(err)
				}
				m.SetPrecision(p)
				b := tinyBatch(cfg, 2, cfg.SeqLen-1, 3)
				m.ZeroGrads()
				st, err := m.ForwardBackward(b, 1)
				if err != nil {
					t.Fatal(err)
				}
				return append([]float32(nil), m.Grads...), st.Loss
			}
			g32, l32 := grads(ops.FP32)
			g16, l16 := grads(ops.BF16)
			if d := math.Abs(l16-l32) / l32; d > 1.0/256 || d == 0 {
				t.Errorf("loss bf16 %.7g vs fp32 %.7g: relative difference %.3g, want in (0, 2⁻⁸]", l16, l32, d)
			}
			m, _ := New(cfg, 1)
			for _, tn := range m.Tensors() {
				var num, den float64
				for i := tn.Offset; i < tn.Offset+tn.Size; i++ {
					d := float64(g16[i] - g32[i])
					num += d * d
					den += float64(g32[i]) * float64(g32[i])
				}
				if den == 0 {
					continue
				}
				rel := math.Sqrt(num / den)
				if rel > bf16GradTol || rel < bf16GradFloor {
					t.Errorf("%s: ‖g_bf16 − g_fp32‖/‖g_fp32‖ = %.3g, want in [%g, %g]", tn.Name, rel, bf16GradFloor, bf16GradTol)
				}
			}
		})
	}
}

// TestBF16InferenceMatchesTraining: in bf16, LogProbs (the forward-only
// path, whose lm_head leaves the packed fp32 path) and the Decoder (whose
// few-row products leave the fp32 dot products) compute what the
// training forward computes, to float32 summation order.
func TestBF16InferenceMatchesTraining(t *testing.T) {
	cfg := tinyConfig()
	cfg.DocMask = false
	m, _ := New(cfg, 4)
	m.SetPrecision(ops.BF16)
	b := tinyBatch(cfg, 1, 6, 8)
	b.SegIDs, b.Mask = nil, nil
	b.Targets[3] = 0
	if _, err := m.Forward(b); err != nil {
		t.Fatal(err)
	}
	loss := append([]float32(nil), m.a.loss[:6]...)
	lp := make([]float32, 6)
	if err := m.LogProbs(b, lp); err != nil {
		t.Fatal(err)
	}
	for i := range lp {
		if d := math.Abs(float64(lp[i] + loss[i])); d > 1e-5 {
			t.Errorf("position %d: LogProbs %g, training forward −%g", i, lp[i], loss[i])
		}
	}
	want := append([]float32(nil), m.a.logits[5*cfg.Vocab:6*cfg.Vocab]...)
	d, err := m.NewDecoder(8)
	if err != nil {
		t.Fatal(err)
	}
	got := make([]float32, cfg.Vocab)
	for i := range 6 {
		if err := d.Append(b.Inputs[i:i+1], got); err != nil {
			t.Fatal(err)
		}
	}
	m32, _ := New(cfg, 4)
	want32 := make([]float32, cfg.Vocab)
	if err := m32.Logits(b.Inputs[:6], want32); err != nil {
		t.Fatal(err)
	}
	var off32 float64
	for i := range got {
		if math.Abs(float64(got[i]-want[i])) > 1e-5 {
			t.Errorf("decoder logit %d: %g, training forward %g", i, got[i], want[i])
		}
		off32 = max(off32, math.Abs(float64(got[i]-want32[i])))
	}
	if off32 == 0 {
		t.Error("bf16 decoder logits equal the fp32 ones: the products did not round")
	}
}
