package model

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// MoE goldens against tools/torchref/moe_ref.py (a dense-masked PyTorch
// formulation of the same block, float64 autograd):
//
//	go test ./internal/model -run TestMoEGoldenTorch -write-golden-inputs
//	/usr/bin/python3 tools/torchref/moe_ref.py internal/model/testdata/golden_moe_*_in.json
//	go test ./internal/model -run TestMoEGoldenTorch
func moeGoldenCases() map[string]Config {
	a := moeConfig()
	a.InitStd = 0.1
	b := a
	for name, mod := range moeCases() {
		if name == "bias-raw-top1-every-layer" {
			mod(&b)
		}
	}
	b.MoETopK, b.MoEAuxLossAlpha = 2, 0.02
	return map[string]Config{"moe_shared_capacity": a, "moe_bias_raw": b}
}

func moeConfigMap(c Config) map[string]any {
	m := configMap(c)
	for k, v := range map[string]any{"moe_every": c.MoEEvery, "moe_experts": c.MoEExperts, "moe_top_k": c.MoETopK,
		"moe_expert_hidden": c.MoEExpertHidden, "moe_shared_expert": c.MoESharedExpert, "moe_norm_topk": c.MoENormTopK,
		"moe_capacity_factor": c.MoECapacityFactor, "moe_aux_loss_alpha": c.MoEAuxLossAlpha,
		"moe_router_z_loss": c.MoERouterZLoss, "moe_balance": c.MoEBalance} {
		m[k] = v
	}
	return m
}

func TestMoEGoldenTorch(t *testing.T) {
	for name, cfg := range moeGoldenCases() {
		t.Run(name, func(t *testing.T) {
			inPath := filepath.Join("testdata", "golden_"+name+"_in.json")
			outPath := filepath.Join("testdata", "golden_"+name+"_out.json")
			m, err := New(cfg, 2024)
			if err != nil {
				t.Fatal(err)
			}
			for _, tn := range m.Tensors() { // a routing bias that changes selections
				if tn.Kind == "bias" {
					for i := 0; i < tn.Size; i++ {
						m.Params[tn.Offset+i] = 0.1 * float32(i%3)
					}
				}
			}
			b := tinyBatch(cfg, 2, cfg.SeqLen, 11)
			if *writeGoldenInputs {
				in := goldenIn{Config: moeConfigMap(cfg), B: b.B, T: b.T, Inputs: b.Inputs, Targets: b.Targets,
					Mask: b.Mask, SegIDs: b.SegIDs, Params: m.Params}
				for _, tn := range m.Tensors() {
					in.Tensors = append(in.Tensors, goldenTensor{tn.Name, tn.Shape, tn.Offset, tn.Size})
				}
				data, _ := json.Marshal(in)
				if err := os.WriteFile(inPath, data, 0o644); err != nil {
					t.Fatal(err)
				}
				t.Logf("wrote %s; now run tools/torchref/moe_ref.py", inPath)
				return
			}
			var in goldenIn
			var out struct {
				goldenOut
				MoEAux  float64 `json:"moe_aux"`
				Dropped int     `json:"dropped"`
			}
			for _, f := range []struct {
				path string
				v    any
			}{{inPath, &in}, {outPath, &out}} {
				data, err := os.ReadFile(f.path)
				if err != nil {
					t.Fatalf("golden file: %v", err)
				}
				if err := json.Unmarshal(data, f.v); err != nil {
					t.Fatalf("%s: %v", f.path, err)
				}
			}
			if len(in.Params) != len(m.Params) {
				t.Fatalf("%s has %d params, model %d", inPath, len(in.Params), len(m.Params))
			}
			copy(m.Params, in.Params)
			b = &Batch{B: in.B, T: in.T, Inputs: in.Inputs, Targets: in.Targets, Mask: in.Mask, SegIDs: in.SegIDs}
			m.ZeroGrads()
			st, err := m.ForwardBackward(b, 1)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(st.Loss-out.Loss) > 1e-5*math.Abs(out.Loss) || math.Abs(st.MoEAux-out.MoEAux) > 1e-5*math.Abs(out.MoEAux)+1e-9 {
				t.Errorf("loss %.8f moe_aux %.8g, torch %.8f moe_aux %.8g", st.Loss, st.MoEAux, out.Loss, out.MoEAux)
			}
			dropped := 0
			for _, l := range m.moe.layers {
				dropped += l.dropped
			}
			if dropped != out.Dropped {
				t.Errorf("dropped %d assignments, torch %d", dropped, out.Dropped)
			}
			if _, err := m.Forward(b); err != nil {
				t.Fatal(err)
			}
			worstL := maxAbsDiff(m.a.logits[:len(out.Logits)], out.Logits)
			if worstL > 1e-4 {
				t.Errorf("logits differ by up to %g", worstL)
			}
			gmax := 0.0
			for _, g := range out.Grads {
				gmax = math.Max(gmax, math.Abs(g))
			}
			worstG := maxAbsDiff(m.Grads, out.Grads)
			if worstG > 1e-4*gmax {
				t.Errorf("grads differ by up to %g (max |g| %g)", worstG, gmax)
			}
			t.Logf("loss %.7f (torch %.7f), moe_aux %.6g (torch %.6g), dropped %d, max |Δlogit| %.2g, max |Δgrad| %.2g of max |g| %.2g",
				st.Loss, out.Loss, st.MoEAux, out.MoEAux, dropped, worstL, worstG, gmax)
		})
	}
}
