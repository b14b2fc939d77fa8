package optim

import (
	"encoding/json"
	"math"
	"os"
	"testing"
)

// muonGolden is testdata/muon_golden.json, written by
// tools/torchref/muon_ref.py (torch float32).
type muonGolden struct {
	Torch string `json:"torch"`
	Cases []struct {
		Name        string         `json:"name"`
		Momentum    float64        `json:"momentum"`
		Nesterov    bool           `json:"nesterov"`
		NSSteps     int            `json:"ns_steps"`
		WeightDecay float64        `json:"weight_decay"`
		MaxGradNorm float64        `json:"max_grad_norm"`
		Exclude     []string       `json:"exclude"`
		Tensors     []goldenTensor `json:"tensors"`
		Init        []float32      `json:"init"`
		Steps       []struct {
			LR     float64   `json:"lr"`
			Grads  []float32 `json:"grads"`
			Params []float32 `json:"params"`
		} `json:"steps"`
	} `json:"cases"`
	NewtonSchulz []struct {
		Rows int       `json:"rows"`
		Cols int       `json:"cols"`
		In   []float32 `json:"in"`
		Out  []float32 `json:"out"`
	} `json:"newton_schulz"`
}

func loadMuonGolden(t *testing.T) *muonGolden {
	t.Helper()
	b, err := os.ReadFile("testdata/muon_golden.json")
	if err != nil {
		t.Fatal(err)
	}
	var g muonGolden
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatalf("testdata/muon_golden.json: %v", err)
	}
	if len(g.Cases) == 0 || len(g.NewtonSchulz) == 0 {
		t.Fatal("testdata/muon_golden.json: no cases")
	}
	return &g
}

// maxAbsDiff is the largest |a[i]-b[i]|.
func maxAbsDiff(t *testing.T, a, b []float32) float64 {
	t.Helper()
	if len(a) != len(b) {
		t.Fatalf("lengths %d and %d", len(a), len(b))
	}
	var d float64
	for i := range a {
		d = math.Max(d, math.Abs(float64(a[i])-float64(b[i])))
	}
	return d
}

// TestMuonGoldenTorch runs the optimizer (Muon on the matrices, AdamW on
// the rest, gradient clipping) for a few steps on the reference's inputs
// and compares every parameter after every step with torch's.
func TestMuonGoldenTorch(t *testing.T) {
	g := loadMuonGolden(t)
	for _, c := range g.Cases {
		t.Run(c.Name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Name, cfg.MuonMomentum, cfg.MuonNesterov, cfg.MuonNSSteps = "muon", c.Momentum, c.Nesterov, c.NSSteps
			cfg.MuonExclude = c.Exclude
			cfg.WeightDecay, cfg.MaxGradNorm = c.WeightDecay, c.MaxGradNorm
			cfg.Beta1, cfg.Beta2, cfg.Eps = 0.9, 0.99, 1e-8
			cfg.ClipUpdateNorm, cfg.SkipBadSteps = false, false
			spans, off := goldenSpans(c.Tensors)
			o, err := NewAdamW(cfg, off, spans)
			if err != nil {
				t.Fatal(err)
			}
			nMuon := 0
			for i := range spans {
				if o.IsMuon(i) {
					nMuon++
				}
			}
			if want := 3 + 1 - len(c.Exclude); nMuon != want {
				t.Fatalf("%d Muon spans, want %d", nMuon, want)
			}
			params := append([]float32(nil), c.Init...)
			var worst float64
			for k, s := range c.Steps {
				if _, err := o.Step(params, s.Grads, 1, s.LR); err != nil {
					t.Fatal(err)
				}
				d := maxAbsDiff(t, params, s.Params)
				if d > 1e-5 || math.IsNaN(d) {
					t.Errorf("step %d: max |Δθ| vs torch %s = %.3g, want <= 1e-5", k+1, g.Torch, d)
				}
				worst = math.Max(worst, d)
			}
			t.Logf("%d steps: max |Δθ| vs torch %s = %.3g", len(c.Steps), g.Torch, worst)
		})
	}
}

// TestNewtonSchulzGoldenTorch compares the orthogonalisation alone (tall,
// wide, square, a row and a column) with torch's.
func TestNewtonSchulzGoldenTorch(t *testing.T) {
	g := loadMuonGolden(t)
	for _, c := range g.NewtonSchulz {
		got, err := Orthogonalize(c.In, c.Rows, c.Cols, 5, 1e-7)
		if err != nil {
			t.Fatal(err)
		}
		d := maxAbsDiff(t, got, c.Out)
		if d > 1e-5 || math.IsNaN(d) {
			t.Errorf("%d×%d: max |Δ| vs torch = %.3g, want <= 1e-5", c.Rows, c.Cols, d)
		}
		t.Logf("%d×%d: max |Δ| vs torch = %.3g", c.Rows, c.Cols, d)
	}
}

// goldenTensor is a tensor of a PyTorch golden (tools/torchref), laid out
// one after another in the flat parameter vector.
type goldenTensor struct {
	Name  string `json:"name"`
	Kind  string `json:"kind"`
	Shape []int  `json:"shape"`
}

// goldenSpans lays ts out one after another: their spans and the total
// size.
func goldenSpans(ts []goldenTensor) (spans []Span, size int) {
	for _, x := range ts {
		n := 1
		for _, s := range x.Shape {
			n *= s
		}
		spans = append(spans, Span{Name: x.Name, Offset: size, Size: n, Kind: x.Kind, Shape: x.Shape})
		size += n
	}
	return spans, size
}
