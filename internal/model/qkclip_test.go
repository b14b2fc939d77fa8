package model

import (
	"math"
	"testing"
)

func maxLogits(t *testing.T, m *Model, b *Batch) [][]float32 {
	t.Helper()
	if _, err := m.Forward(b); err != nil {
		t.Fatal(err)
	}
	out := make([][]float32, len(m.Vitals().MaxAttnLogit))
	for l, hs := range m.Vitals().MaxAttnLogit {
		out[l] = append([]float32(nil), hs...)
	}
	return out
}

// TestQKClip forces a large attention logit in one head (its q_proj rows,
// or with QK-Norm the layer's q_norm gain, scaled up) and checks that after
// Apply the head's max logit on the same batch is at most τ, that the heads
// under τ and every other parameter are untouched, and the count.
func TestQKClip(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(*Config)
	}{
		{"mha", func(c *Config) { c.QKNorm, c.NKVHeads = false, 4 }},
		{"gqa", func(c *Config) { c.QKNorm, c.NKVHeads = false, 2 }},
		{"gqa-nope", func(c *Config) { c.QKNorm, c.NKVHeads, c.NoPEEvery = false, 1, 0 }},
		{"qk-norm", func(c *Config) { c.QKNorm = true }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tinyConfig()
			cfg.DocMask = false
			tc.mod(&cfg)
			m, err := New(cfg, 3)
			if err != nil {
				t.Fatal(err)
			}
			b := tinyBatch(cfg, 2, 8, 5)
			b.SegIDs = nil
			const L, H = 0, 1 // the forced head
			hd := cfg.DModel / cfg.NHeads
			var forced []float32
			if cfg.QKNorm {
				x, _ := m.Tensor("model.layers.0.self_attn.q_norm.weight")
				forced = m.Params[x.Offset : x.Offset+x.Size]
			} else {
				x, _ := m.Tensor("model.layers.0.self_attn.q_proj.weight")
				forced = m.Params[x.Offset+H*hd*cfg.DModel : x.Offset+(H+1)*hd*cfg.DModel]
			}
			for i := range forced {
				forced[i] *= 40
			}
			before := maxLogits(t, m, b)
			tau := float64(before[L][H]) / 4
			want := 0
			for _, hs := range before {
				for _, s := range hs {
					if float64(s) > tau {
						want++
					}
				}
			}
			if want < 1 || before[L][H] <= 0 {
				t.Fatalf("forcing gave no head over τ: %v", before)
			}
			if !cfg.QKNorm && want != 1 {
				t.Fatalf("want only the forced head over τ=%g, got %d: %v", tau, want, before)
			}
			params0 := append([]float32(nil), m.Params...)
			c, err := NewQKClip(cfg, m.Tensors())
			if err != nil {
				t.Fatal(err)
			}
			n, err := c.Apply(m.Params, before, tau)
			if err != nil {
				t.Fatal(err)
			}
			if n != want {
				t.Errorf("clipped %d heads, want %d", n, want)
			}
			after := maxLogits(t, m, b)
			// Without QK-Norm the head lands on τ; with it the layer's shared
			// gains follow the layer's largest logit, so it may land below.
			if s := float64(after[L][H]); s > tau*(1+1e-4) || (!cfg.QKNorm && s < tau*(1-1e-3)) {
				t.Errorf("forced head: max logit %g → %g, want ≈ τ = %g", before[L][H], s, tau)
			}
			for h := range after[L] {
				if float64(before[L][h]) > tau {
					if s := float64(after[L][h]); s > tau*(1+1e-4) {
						t.Errorf("clipped head %d: max logit %g, want <= τ = %g", h, s, tau)
					}
				} else if !cfg.QKNorm && after[L][h] != before[L][h] {
					t.Errorf("head %d under τ: max logit %g → %g, want untouched", h, before[L][h], after[L][h])
				}
			}
			// Parameters outside the clipped head's q/k (or the layer's gains) are untouched.
			changed := map[string]bool{}
			for _, x := range m.Tensors() {
				for i := x.Offset; i < x.Offset+x.Size; i++ {
					if m.Params[i] != params0[i] {
						changed[x.Name] = true
						break
					}
				}
			}
			wantChanged := map[string]bool{"model.layers.0.self_attn.q_proj.weight": true}
			switch {
			case cfg.QKNorm:
				wantChanged = map[string]bool{"model.layers.0.self_attn.q_norm.weight": true, "model.layers.0.self_attn.k_norm.weight": true}
			case cfg.NKVHeads == cfg.NHeads:
				wantChanged["model.layers.0.self_attn.k_proj.weight"] = true
			}
			for name := range changed {
				if !wantChanged[name] {
					t.Errorf("%s changed", name)
				}
			}
			for name := range wantChanged {
				if !changed[name] {
					t.Errorf("%s not rescaled", name)
				}
			}
			if !cfg.QKNorm { // only the forced head's rows of q_proj moved
				x, _ := m.Tensor("model.layers.0.self_attn.q_proj.weight")
				for i := x.Offset; i < x.Offset+x.Size; i++ {
					row := (i - x.Offset) / cfg.DModel / hd
					if row != H && m.Params[i] != params0[i] {
						t.Fatalf("q_proj head %d changed", row)
					}
				}
			}
			// τ = 0 is off: nothing changes.
			p1 := append([]float32(nil), m.Params...)
			if n, err := c.Apply(m.Params, before, 0); n != 0 || err != nil {
				t.Errorf("τ=0: %d clipped, %v", n, err)
			}
			for i := range p1 {
				if p1[i] != m.Params[i] {
					t.Fatal("τ=0 changed the parameters")
				}
			}
		})
	}
}

func TestQKClipErrors(t *testing.T) {
	cfg := tinyConfig()
	m, _ := New(cfg, 1)
	c, err := NewQKClip(cfg, m.Tensors())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Apply(m.Params, [][]float32{{1, 2, 3, 4}}, 1); err == nil {
		t.Error("wrong layer count: no error")
	}
	if _, err := c.Apply(m.Params, [][]float32{{1, 2}, {1, 2}}, 1); err == nil {
		t.Error("wrong head count: no error")
	}
	nan := float32(math.NaN())
	inf := float32(math.Inf(1))
	if n, err := c.Apply(m.Params, [][]float32{{nan, inf, 0, 0}, {0, 0, 0, 0}}, 1); n != 0 || err != nil {
		t.Errorf("non-finite logits: %d clipped, %v; want 0, nil", n, err)
	}
	if _, err := NewQKClip(cfg, m.Tensors()[:3]); err == nil {
		t.Error("missing tensors: no error")
	}
}
