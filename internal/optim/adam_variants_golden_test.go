package optim

import (
	"encoding/json"
	"math"
	"os"
	"slices"
	"testing"
)

// adamVariantsGolden is testdata/adam_variants_golden.json, written by
// tools/torchref/adam_variants_ref.py (torch float32).
type adamVariantsGolden struct {
	Torch string `json:"torch"`
	Cases []struct {
		Name          string         `json:"name"`
		Optimizer     string         `json:"optimizer"`
		WeightDecay   float64        `json:"weight_decay"`
		MaxGradNorm   float64        `json:"max_grad_norm"`
		PeakLR        float64        `json:"peak_lr"`
		MomentumDecay float64        `json:"momentum_decay"`
		Tensors       []goldenTensor `json:"tensors"`
		Init          []float32      `json:"init"`
		Steps         []struct {
			LR     float64   `json:"lr"`
			Grads  []float32 `json:"grads"`
			Params []float32 `json:"params"`
		} `json:"steps"`
	} `json:"cases"`
}

// TestAdamVariantsGoldenTorch runs AdamW, NAdamW and AdamC for a few steps
// (warm-up and decay of the LR, gradient clipping, weight decay on the
// matrices) on the reference's inputs and compares every parameter after
// every step with torch's, within the tolerance of the AdamW group of
// TestMuonGoldenTorch (1e-5). Each case also runs as one of the other
// variants, which must miss the reference by far more: the golden tells
// the three apart.
func TestAdamVariantsGoldenTorch(t *testing.T) {
	b, err := os.ReadFile("testdata/adam_variants_golden.json")
	if err != nil {
		t.Fatal(err)
	}
	var g adamVariantsGolden
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatalf("testdata/adam_variants_golden.json: %v", err)
	}
	if len(g.Cases) < 5 {
		t.Fatalf("testdata/adam_variants_golden.json: %d cases, want 5", len(g.Cases))
	}
	other := map[string]string{"adamw": "adamc", "adamc": "adamw", "nadamw": "adamw"}
	for _, c := range g.Cases {
		run := func(name string) (worst float64, perStep []float64) {
			cfg := DefaultConfig()
			cfg.Name, cfg.LR, cfg.NAdamMomentumDecay = name, c.PeakLR, c.MomentumDecay
			cfg.WeightDecay, cfg.MaxGradNorm = c.WeightDecay, c.MaxGradNorm
			cfg.Beta1, cfg.Beta2, cfg.Eps = 0.9, 0.99, 1e-8
			cfg.ClipUpdateNorm, cfg.SkipBadSteps = false, false
			spans, off := goldenSpans(c.Tensors)
			o, err := NewAdamW(cfg, off, spans)
			if err != nil {
				t.Fatal(err)
			}
			params := append([]float32(nil), c.Init...)
			for _, s := range c.Steps {
				if _, err := o.Step(params, s.Grads, 1, s.LR); err != nil {
					t.Fatal(err)
				}
				d := maxAbsDiff(t, params, s.Params)
				if math.IsNaN(d) {
					d = math.Inf(1)
				}
				perStep = append(perStep, d)
				worst = math.Max(worst, d)
			}
			return worst, perStep
		}
		t.Run(c.Name, func(t *testing.T) {
			worst, perStep := run(c.Optimizer)
			for k, d := range perStep {
				if d > 1e-5 {
					t.Errorf("step %d: max |Δθ| vs torch %s = %.3g, want <= 1e-5", k+1, g.Torch, d)
				}
			}
			wrong, _ := run(other[c.Optimizer])
			if wrong < 100*worst || wrong < 1e-5 {
				t.Errorf("as %s the case misses torch by %.3g only (as %s: %.3g): the golden does not tell them apart", other[c.Optimizer], wrong, c.Optimizer, worst)
			}
			t.Logf("%s, %d steps: max |Δθ| vs torch %s = %.3g (as %s: %.3g)", c.Optimizer, len(c.Steps), g.Torch, worst, other[c.Optimizer], wrong)
		})
	}
}

// TestAdamVariantsResumeBitExact: an optimizer rebuilt from another's
// state (moments, Steps, windows: what a checkpoint holds) after k steps
// continues to the same bits as the uninterrupted one, for every variant
// (NAdamW's product of μ is recomputed from Steps), at k = 0 (the first
// step), 1 and 3, with a skipped step in between.
func TestAdamVariantsResumeBitExact(t *testing.T) {
	n, spans := telemetrySpans()
	for _, name := range []string{"adamw", "nadamw", "adamc"} {
		c := DefaultConfig()
		c.Name, c.LR = name, 2e-3
		c.SkipBadSteps, c.SkipWindow, c.SkipMinSteps, c.SkipSigma = true, 8, 2, 1
		lr := func(s int) float64 { return 1e-3 * float64(1+s%3) }
		loss := func(s int) float64 {
			if s == 2 {
				return 50 // skipped
			}
			return 2 + 0.01*float64(s)
		}
		newOpt := func() *AdamW {
			o, err := NewAdamW(c, n, spans)
			if err != nil {
				t.Fatal(err)
			}
			return o
		}
		init := func() []float32 {
			p := make([]float32, n)
			for i := range p {
				p[i] = float32(i%13-6) * 0.01
			}
			return p
		}
		ref, pRef := newOpt(), init()
		skipped := 0
		for s := range 6 {
			r, err := ref.Step(pRef, telemetryInputs(n, s), loss(s), lr(s))
			if err != nil {
				t.Fatal(err)
			}
			if r.Skipped {
				skipped++
			}
		}
		if skipped != 1 {
			t.Fatalf("%s: %d skipped steps, want 1: the test does not cover a skip", name, skipped)
		}
		for _, k := range []int{0, 1, 3} {
			a, p := newOpt(), init()
			for s := range k {
				if _, err := a.Step(p, telemetryInputs(n, s), loss(s), lr(s)); err != nil {
					t.Fatal(err)
				}
			}
			b := newOpt()
			copy(b.M, a.M)
			copy(b.V, a.V)
			b.Steps, b.Losses, b.GradNorms, b.UpdateNorms = a.Steps, a.Losses, a.GradNorms, a.UpdateNorms
			for s := k; s < 6; s++ {
				if _, err := b.Step(p, telemetryInputs(n, s), loss(s), lr(s)); err != nil {
					t.Fatal(err)
				}
			}
			if i := bits32(p, pRef); i >= 0 {
				t.Errorf("%s resumed after %d steps: param %d = %g, uninterrupted %g", name, k, i, p[i], pRef[i])
			}
			if bits32(b.M, ref.M) >= 0 || bits32(b.V, ref.V) >= 0 || b.Steps != ref.Steps {
				t.Errorf("%s resumed after %d steps: moments or step count differ", name, k)
			}
		}
	}
}

// TestRebaseUpdateNorms: after RebaseUpdateNorms the next applied step
// rescales the update-norm window by its update norm over the window's
// mean (reported in Result.UpdateWindowRebase), so a step 10× the old
// scale is not clipped while the window's relative spread is kept, and the
// flag clears; a skipped step leaves it pending; without the flag the same
// step is clipped.
func TestRebaseUpdateNorms(t *testing.T) {
	for _, rebase := range []bool{true, false} {
		c := quietCfg()
		c.ClipUpdateNorm, c.UpdateWindow, c.UpdateMinSteps, c.UpdateSigma = true, 8, 2, 2
		c.SkipBadSteps, c.SkipWindow, c.SkipMinSteps, c.SkipSigma = true, 8, 2, 3
		o, err := NewAdamW(c, 4, []Span{{Name: "w", Size: 4, Kind: "norm"}})
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range []float64{0.9, 1.1, 1.0, 1.0} { // the old optimizer's norms: mean 1, σ ≈ 0.07
			o.UpdateNorms.Push(v)
			o.Losses.Push(2)
			o.GradNorms.Push(1)
		}
		o.Losses.Push(2.01)
		o.RebaseUpdateNorms = rebase
		p := []float32{1, 1, 1, 1}
		// A skipped step (loss far above the window) first: the rebase waits.
		if r, _ := o.Step(p, []float32{1, 1, 1, 1}, 50, 1); !r.Skipped || r.UpdateWindowRebase != 0 || o.RebaseUpdateNorms != rebase {
			t.Fatalf("rebase %v: skipped step %+v, pending %v", rebase, r, o.RebaseUpdateNorms)
		}
		// Fresh moments: the update is sign(g) per element, norm 2, twice the window's scale.
		r, err := o.Step(p, []float32{1, -1, 1, -1}, 2, 1)
		if err != nil {
			t.Fatal(err)
		}
		if !rebase {
			if !r.UpdateClipped || r.UpdateWindowRebase != 0 {
				t.Errorf("without rebase: clipped %v, rebase %g; want the step clipped", r.UpdateClipped, r.UpdateWindowRebase)
			}
			continue
		}
		f := r.UpdateNorm / 1.0
		if r.UpdateClipped || math.Abs(r.UpdateWindowRebase-f) > 1e-12 || o.RebaseUpdateNorms {
			t.Errorf("rebase: clipped %v, factor %g (want %g), still pending %v", r.UpdateClipped, r.UpdateWindowRebase, f, o.RebaseUpdateNorms)
		}
		if math.IsInf(r.UpdateClipAt, 0) || r.UpdateClipAt <= r.UpdateNorm {
			t.Errorf("rebase: threshold %g for norm %g: want one in force, above the step", r.UpdateClipAt, r.UpdateNorm)
		}
		if want := []float64{0.9 * f, 1.1 * f, f, f, r.UpdateNorm}; !slices.EqualFunc(o.UpdateNorms.Vals, want, func(a, b float64) bool { return math.Abs(a-b) <= 1e-12*b }) {
			t.Errorf("rebased window %v, want %v", o.UpdateNorms.Vals, want)
		}
	}
}
