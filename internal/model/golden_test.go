package model

import (
	"encoding/json"
	"flag"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// Goldens against the PyTorch reference (tools/torchref/ref.py):
//
//	go test ./internal/model -run TestGoldenTorch -write-golden-inputs
//	/usr/bin/python3 tools/torchref/ref.py internal/model/testdata/golden_*_in.json
//	go test ./internal/model -run TestGoldenTorch
//
// The first writes weights, config and batch; the script computes loss,
// logits and gradients in float64 with autograd and writes *_out.json; the
// test compares. CI runs only the last step (torch is not needed).
var writeGoldenInputs = flag.Bool("write-golden-inputs", false, "write testdata/golden_*_in.json for tools/torchref/ref.py")

type goldenTensor struct {
	Name   string `json:"name"`
	Shape  []int  `json:"shape"`
	Offset int    `json:"offset"`
	Size   int    `json:"size"`
}

type goldenIn struct {
	Config  map[string]any `json:"config"`
	B       int            `json:"B"`
	T       int            `json:"T"`
	Inputs  []int32        `json:"inputs"`
	Targets []int32        `json:"targets"`
	Mask    []float32      `json:"mask"`
	SegIDs  []int32        `json:"seg_ids"`
	Tensors []goldenTensor `json:"tensors"`
	Params  []float32      `json:"params"`
}

type goldenOut struct {
	Loss   float64   `json:"loss"`
	ZLoss  float64   `json:"z_loss"`
	Logits []float64 `json:"logits"`
	Grads  []float64 `json:"grads"`
}

func goldenCases() map[string]Config {
	all := tinyConfig()
	all.InitStd = 0.1
	plain := Config{Vocab: 29, DModel: 24, NLayers: 2, NHeads: 3, NKVHeads: 3, MLPHidden: 40,
		SeqLen: 12, RopeTheta: 10000, NormEps: 1e-5, InitStd: 0.1}
	return map[string]Config{"all": all, "plain": plain}
}

func configMap(c Config) map[string]any {
	return map[string]any{
		"vocab": c.Vocab, "d_model": c.DModel, "n_layers": c.NLayers, "n_heads": c.NHeads,
		"n_kv_heads": c.NKVHeads, "mlp_hidden": c.MLPHidden, "seq_len": c.SeqLen,
		"rope_theta": c.RopeTheta, "norm_eps": c.NormEps, "qk_norm": c.QKNorm,
		"tied_embeddings": c.Tied, "nope_every": c.NoPEEvery, "z_loss": c.ZLoss, "doc_mask": c.DocMask,
	}
}

func TestGoldenTorch(t *testing.T) {
	for name, cfg := range goldenCases() {
		t.Run(name, func(t *testing.T) {
			inPath := filepath.Join("testdata", "golden_"+name+"_in.json")
			outPath := filepath.Join("testdata", "golden_"+name+"_out.json")
			m, err := New(cfg, 2024)
			if err != nil {
				t.Fatal(err)
			}
			b := tinyBatch(cfg, 2, cfg.SeqLen, 11)
			if *writeGoldenInputs {
				in := goldenIn{Config: configMap(cfg), B: b.B, T: b.T, Inputs: b.Inputs, Targets: b.Targets,
					Mask: b.Mask, SegIDs: b.SegIDs, Params: m.Params}
				for _, tn := range m.Tensors() {
					in.Tensors = append(in.Tensors, goldenTensor{tn.Name, tn.Shape, tn.Offset, tn.Size})
				}
				data, _ := json.Marshal(in)
				if err := os.WriteFile(inPath, data, 0o644); err != nil {
					t.Fatal(err)
				}
				t.Logf("wrote %s; now run tools/torchref/ref.py", inPath)
				return
			}
			var in goldenIn
			var out goldenOut
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
			if math.Abs(st.Loss-out.Loss) > 1e-5*math.Abs(out.Loss) || math.Abs(st.ZLoss-out.ZLoss) > 1e-5*math.Abs(out.ZLoss)+1e-9 {
				t.Errorf("loss %.8f z %.8g, torch %.8f z %.8g", st.Loss, st.ZLoss, out.Loss, out.ZLoss)
			}
			// logits: Forward leaves them in the arena
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
			t.Logf("loss %.7f (torch %.7f), max |Δlogit| %.2g, max |Δgrad| %.2g of max |g| %.2g", st.Loss, out.Loss, worstL, worstG, gmax)
		})
	}
}

func maxAbsDiff(a []float32, b []float64) float64 {
	w := 0.0
	for i := range b {
		w = math.Max(w, math.Abs(float64(a[i])-b[i]))
	}
	return w
}
