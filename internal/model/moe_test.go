package model

import (
	"hash/fnv"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"unsafe"
)

// moeConfig is tinyConfig with layer 1 a mixture of experts: 4 experts,
// top-2 renormalised, a shared expert, a capacity that drops, both
// auxiliary losses large enough to show in the gradient.
func moeConfig() Config {
	c := tinyConfig()
	c.MoEEvery, c.MoEExperts, c.MoETopK, c.MoEExpertHidden = 2, 4, 2, 8
	c.MoESharedExpert, c.MoENormTopK, c.MoECapacityFactor = true, true, 1.0
	c.MoEAuxLossAlpha, c.MoERouterZLoss, c.MoEBalance, c.MoEBiasRate = 0.1, 0.05, "aux", 1e-3
	return c
}

func moeCases() map[string]func(*Config) {
	return map[string]func(*Config){
		"shared-norm-capacity": func(*Config) {},
		"bias-raw-top1-every-layer": func(c *Config) {
			c.MoEEvery, c.MoEExperts, c.MoETopK = 1, 3, 1
			c.MoESharedExpert, c.MoENormTopK, c.MoECapacityFactor = false, false, 0
			c.MoEBalance = "bias"
		},
		"top3-of-5-dropless": func(c *Config) {
			c.MoEEvery, c.MoEExperts, c.MoETopK, c.MoECapacityFactor = 1, 5, 3, 0
			c.QKNorm, c.Tied, c.DocMask = false, false, false
		},
	}
}

// routing returns a hash of every MoE layer's selections and dispatch
// rows: central differences are valid only where routing did not change.
func routing(m *Model) uint64 {
	h := fnv.New64a()
	for _, st := range m.moe.layers {
		for _, s := range [][]int32{st.sel, st.row} {
			if len(s) > 0 {
				h.Write(unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), 4*len(s)))
			}
		}
	}
	return h.Sum64()
}

func moeObjective(t *testing.T, m *Model, b *Batch) float64 {
	st, err := m.Forward(b)
	if err != nil {
		t.Fatal(err)
	}
	return st.Loss + st.ZLoss + st.MoEAux
}

// TestMoEGradFD checks ∂objective/∂θ (cross-entropy + z-loss + balancing
// loss + router z-loss) of MoE models against central differences for the
// largest-gradient entry and random entries of every tensor, skipping
// perturbations that change the routing (top-k is piecewise constant).
func TestMoEGradFD(t *testing.T) {
	for name, mod := range moeCases() {
		t.Run(name, func(t *testing.T) {
			cfg := moeConfig()
			mod(&cfg)
			m, err := New(cfg, 1)
			if err != nil {
				t.Fatal(err)
			}
			for _, tn := range m.Tensors() { // a non-zero routing bias
				if tn.Kind == "bias" {
					for i := 0; i < tn.Size; i++ {
						m.Params[tn.Offset+i] = 0.05 * float32(i%3)
					}
				}
			}
			b := tinyBatch(cfg, 2, 7, 3)
			m.ZeroGrads()
			if _, err := m.ForwardBackward(b, 1); err != nil {
				t.Fatal(err)
			}
			grad := append([]float32(nil), m.Grads...)
			base := routing(m)
			r := rand.New(rand.NewPCG(5, 5))
			const h = 1e-2
			bad, checked, skipped := 0, 0, 0
			for _, tn := range m.Tensors() {
				idx := []int{}
				best := 0
				for i := 0; i < tn.Size; i++ {
					if math.Abs(float64(grad[tn.Offset+i])) > math.Abs(float64(grad[tn.Offset+best])) {
						best = i
					}
				}
				idx = append(idx, best)
				for k := 0; k < 4; k++ {
					idx = append(idx, r.IntN(tn.Size))
				}
				for _, i := range idx {
					p := tn.Offset + i
					old := m.Params[p]
					m.Params[p] = old + h
					lp := moeObjective(t, m, b)
					rp := routing(m)
					m.Params[p] = old - h
					lm := moeObjective(t, m, b)
					rm := routing(m)
					m.Params[p] = old
					if rp != base || rm != base {
						skipped++
						continue
					}
					checked++
					num := (lp - lm) / (2 * h)
					ana := float64(grad[p])
					if tn.Kind == "bias" && ana != 0 {
						t.Errorf("%s[%d]: the routing bias has gradient %g, want 0", tn.Name, i, ana)
					}
					if math.Abs(num-ana) > 3e-2*math.Abs(ana)+3e-4 {
						bad++
						t.Errorf("%s[%d]: analytic %.6g numeric %.6g", tn.Name, i, ana, num)
					}
				}
			}
			if bad > 0 {
				t.Fatalf("%d gradient mismatches", bad)
			}
			if skipped > checked/5 {
				t.Fatalf("%d of %d perturbations changed the routing: the check says little", skipped, checked+skipped)
			}
			t.Logf("%d entries checked, %d skipped (routing changed)", checked, skipped)
		})
	}
}

func TestMoELayoutAndFLOPs(t *testing.T) {
	cfg := moeConfig()
	m, err := New(cfg, 1)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"model.layers.0.mlp.gate_proj.weight", "model.layers.1.mlp.gate.weight",
		"model.layers.1.mlp.experts.3.down_proj.weight", "model.layers.1.mlp.shared_expert.up_proj.weight"}
	for _, n := range want {
		if _, ok := m.Tensor(n); !ok {
			t.Errorf("missing tensor %s", n)
		}
	}
	if _, ok := m.Tensor("model.layers.1.mlp.gate_proj.weight"); ok {
		t.Error("MoE layer 1 has a dense gate_proj")
	}
	if _, ok := m.Tensor("model.layers.1.mlp.gate.e_score_correction_bias"); ok {
		t.Error("moe_balance = aux has a routing bias")
	}
	n, err := cfg.NumParams()
	if err != nil || n != m.NumParams() {
		t.Fatalf("Config.NumParams %d (%v), model %d", n, err, m.NumParams())
	}
	// active parameters: the MoE layer counts router + (top_k + shared) experts, not all E
	dense := cfg
	dense.MoEEvery = 0
	md, _ := New(dense, 1)
	D, F, Fe, E := float64(cfg.DModel), float64(cfg.MLPHidden), float64(cfg.MoEExpertHidden), float64(cfg.MoEExperts)
	wantDiff := 6 * (E*D + 3*3*D*Fe - 3*D*F)
	if got := m.FLOPsPerToken() - md.FLOPsPerToken(); math.Abs(got-wantDiff) > 1e-6 {
		t.Errorf("FLOPs/token MoE − dense = %g, want %g", got, wantDiff)
	}
}

func TestMoEConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		mod  func(*Config)
		want string
	}{
		{func(c *Config) { c.MoETopK = 5 }, "model.moe_top_k"},
		{func(c *Config) { c.MoEExperts = 0 }, "model.moe_experts"},
		{func(c *Config) { c.MoEExpertHidden = 0 }, "model.moe_expert_hidden"},
		{func(c *Config) { c.MoEBalance = "loss" }, "model.moe_balance"},
		{func(c *Config) { c.MoECapacityFactor = -1 }, "model.moe_capacity_factor"},
		{func(c *Config) { c.MoEAuxLossAlpha = math.NaN() }, "model.moe_aux_loss_alpha"},
		{func(c *Config) { c.MoEEvery = 3 }, "model.moe_every"},
		{func(c *Config) { c.MoEEvery = -1 }, "model.moe_every"},
	} {
		c := moeConfig()
		tc.mod(&c)
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %v, want one naming %s", err, tc.want)
		}
	}
	// the moe_ fields are ignored while moe_every = 0
	c := moeConfig()
	c.MoEEvery, c.MoEBalance, c.MoETopK = 0, "", 0
	if err := c.Validate(); err != nil {
		t.Errorf("dense config with unused moe fields: %v", err)
	}
	for _, tc := range []struct {
		mod  func(*Config)
		want string // "" = expressible
	}{
		{func(c *Config) { c.MoESharedExpert, c.MoECapacityFactor = false, 0 }, ""},
		{func(*Config) {}, "model.moe_shared_expert"},
		{func(c *Config) { c.MoESharedExpert, c.MoECapacityFactor = false, 0; c.MoEBalance = "bias" }, "model.moe_balance"},
		{func(c *Config) { c.MoESharedExpert = false }, "model.moe_capacity_factor"},
		{func(c *Config) { c.MoESharedExpert, c.MoECapacityFactor, c.QKNorm = false, 0, false }, "model.qk_norm"},
	} {
		c := moeConfig()
		tc.mod(&c)
		err := c.HFExpressible()
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("HFExpressible: %v, want %q", err, tc.want)
		}
		if tc.want == "" && c.HFMoEConfig()["decoder_sparse_step"] != c.MoEEvery {
			t.Errorf("HFMoEConfig %v", c.HFMoEConfig())
		}
	}
}
