package optim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/kernels"
)

// asmLayout builds spans of the given sizes (0 = a gap of 5 parameters
// outside every span) with kinds cycling over matrix, norm, embedding,
// bias, starting at offset off; it returns them and the parameter count.
func asmLayout(off int, sizes ...int) ([]Span, int) {
	kinds := []string{"matrix", "norm", "embedding", "bias"}
	var spans []Span
	for i, s := range sizes {
		if s == 0 {
			off += 5
			continue
		}
		spans = append(spans, Span{Name: fmt.Sprintf("t%d", i), Offset: off, Size: s, Kind: kinds[i%len(kinds)]})
		off += s
	}
	return spans, off + 3
}

// asmMuonLayout mixes Muon matrices with AdamW tensors of odd sizes.
func asmMuonLayout() ([]Span, int) {
	spec := []struct {
		name, kind string
		shape      []int
	}{
		{"embed", "embedding", []int{301, 16}},
		{"norm", "norm", []int{16}},
		{"w1", "matrix", []int{16, 72}},
		{"w2", "matrix", []int{72, 16}},
		{"bias", "bias", []int{13}},
		{"lm_head.weight", "matrix", []int{301, 16}},
	}
	var spans []Span
	off := 0
	for _, s := range spec {
		n := 1
		for _, d := range s.shape {
			n *= d
		}
		spans = append(spans, Span{Name: s.name, Offset: off, Size: n, Kind: s.kind, Shape: s.shape})
		off += n
	}
	return spans, off
}

// asmGrads returns the gradients of one step: normal values times a scale
// of 10^e with e uniform in [lo, hi] per element, and the spans listed in
// zero all zero.
func asmGrads(n int, spans []Span, seed uint64, lo, hi float64, zero ...int) []float32 {
	rng := rand.New(rand.NewPCG(seed, 7))
	g := make([]float32, n)
	for i := range g {
		g[i] = float32(rng.NormFloat64() * math.Pow(10, lo+(hi-lo)*rng.Float64()))
	}
	for _, z := range zero {
		s := spans[z]
		clear(g[s.Offset : s.Offset+s.Size])
	}
	return g
}

// stepTrace is everything a run of steps produced.
type stepTrace struct {
	p, m, v []float32
	rs      []Result
	errs    []string
	sq      [][]SpanSquares
}

func bits32(a, b []float32) int {
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return i
		}
	}
	return -1
}

func sameF64(a, b float64) bool { return math.Float64bits(a) == math.Float64bits(b) }

// sameResult compares every field of two Results, floats bit for bit.
func sameResult(a, b Result) bool {
	return sameF64(a.GradNorm, b.GradNorm) && a.GradClipped == b.GradClipped &&
		sameF64(a.UpdateNorm, b.UpdateNorm) && sameF64(a.UpdateNormPost, b.UpdateNormPost) &&
		sameF64(a.UpdateClipAt, b.UpdateClipAt) && a.UpdateClipped == b.UpdateClipped &&
		sameF64(a.ParamNorm, b.ParamNorm) && sameF64(a.UpdateToWeight, b.UpdateToWeight) &&
		a.Skipped == b.Skipped && a.SkipReason == b.SkipReason &&
		sameF64(a.AdamMNorm, b.AdamMNorm) && sameF64(a.AdamVNorm, b.AdamVNorm)
}

// TestAdamWAssemblyBitIdentical runs the same steps through the AVX-512
// kernels and through the Go loops and requires every output bit to
// agree: params, M, V, each Result field and the span squares, step after
// step, with telemetry on and off, at 1 and 3 threads.
func TestAdamWAssemblyBitIdentical(t *testing.T) {
	if !useAVX512 {
		t.Skip("no AVX-512 on this CPU: only the Go loops run")
	}
	defer func(v bool) { useAVX512 = v }(useAVX512)
	defer kernels.SetThreads(kernels.Threads())

	tiny, nTiny := asmLayout(0, 1, 3, 7, 0, 8, 9, 15, 17, 0, 31, 100, 257, 2)
	big, nBig := asmLayout(0, 3*chunkSize+100, 37, 9*chunkSize+3, 0, 500, 4*chunkSize, 9)
	shifted, nShifted := asmLayout(3, 5*chunkSize+13, 1, 2*chunkSize-7)
	muon, nMuon := asmMuonLayout()

	base := DefaultConfig()
	base.ClipUpdateNorm, base.SkipBadSteps, base.MaxGradNorm = false, false, 0
	type knob func(*Config)
	gradClip := func(c *Config) { c.MaxGradNorm = 1e-3 }
	updClip := func(c *Config) { c.ClipUpdateNorm, c.UpdateMinSteps, c.UpdateSigma = true, 2, 1e-3 }
	skip := func(c *Config) { c.SkipBadSteps, c.SkipWindow, c.SkipMinSteps, c.SkipSigma = true, 8, 3, 2 }
	wdAll := func(c *Config) { c.WeightDecay, c.DecayKinds = 0.1, []string{"matrix", "norm", "embedding", "bias"} }
	noWD := func(c *Config) { c.WeightDecay = 0 }
	muonOn := func(c *Config) { c.Name = "muon" }

	cases := []struct {
		name       string
		spans      []Span
		n          int
		knobs      []knob
		lo, hi     float64 // gradient magnitudes 10^lo … 10^hi
		zero       []int   // spans with zero gradients on even steps
		nanParam   bool    // a NaN parameter: every step refused
		lossSpike  int     // the step (0-based) whose loss is 100, else 2
		wantClip   bool    // the gradient is clipped at some step
		wantUpdate bool    // the update is clipped at some step
		wantSkip   bool
	}{
		{name: "tiny spans", spans: tiny, n: nTiny, lo: -3, hi: -1, zero: []int{2}},
		{name: "tiny spans, grad and update clipping", spans: tiny, n: nTiny, knobs: []knob{gradClip, updClip}, lo: -3, hi: 0, wantClip: true, wantUpdate: true},
		{name: "chunks, weight decay everywhere", spans: big, n: nBig, knobs: []knob{wdAll, updClip}, lo: -4, hi: -2, zero: []int{1}, wantUpdate: true},
		{name: "chunks, no weight decay, clipping", spans: big, n: nBig, knobs: []knob{noWD, gradClip}, lo: -4, hi: -2, wantClip: true},
		{name: "shifted chunks, skipped step", spans: shifted, n: nShifted, knobs: []knob{skip}, lo: -3, hi: -2, lossSpike: 5, wantSkip: true},
		{name: "huge and tiny magnitudes", spans: big, n: nBig, knobs: []knob{wdAll}, lo: -30, hi: 25},
		{name: "denormal moments", spans: tiny, n: nTiny, lo: -44, hi: -38},
		{name: "muon mixed in", spans: muon, n: nMuon, knobs: []knob{muonOn, gradClip, updClip}, lo: -3, hi: -1, zero: []int{0}, wantClip: true},
		{name: "NaN parameter", spans: tiny, n: nTiny, lo: -3, hi: -1, nanParam: true},
	}
	for _, tc := range cases {
		cfg := base
		for _, k := range tc.knobs {
			k(&cfg)
		}
		run := func(asm, tel bool, threads int) stepTrace {
			useAVX512 = asm
			kernels.SetThreads(threads)
			o, err := NewAdamW(cfg, tc.n, tc.spans)
			if err != nil {
				t.Fatal(err)
			}
			o.noTelemetry = !tel
			p := asmGrads(tc.n, tc.spans, 99, -2, 0)
			if tc.nanParam {
				p[tc.spans[3].Offset+1] = float32(math.NaN())
			}
			var tr stepTrace
			for step := 0; step < 6; step++ {
				var zero []int
				if step%2 == 0 {
					zero = tc.zero
				}
				g := asmGrads(tc.n, tc.spans, uint64(step), tc.lo, tc.hi, zero...)
				if step < 3 && tc.wantUpdate {
					// Only the first tensor moves, then all of them: an
					// update-norm spike at step 3.
					clear(g[tc.spans[0].Offset+tc.spans[0].Size:])
				}
				loss := 2 + 0.01*float64(step%3)
				if tc.lossSpike > 0 && step == tc.lossSpike {
					loss = 100
				}
				r, err := o.Step(p, g, loss, 1e-2)
				tr.rs = append(tr.rs, r)
				tr.errs = append(tr.errs, fmt.Sprint(err))
				tr.sq = append(tr.sq, append([]SpanSquares(nil), o.SpanSquares()...))
			}
			tr.p, tr.m, tr.v = p, o.M, o.V
			useAVX512 = true
			return tr
		}
		for _, tel := range []bool{true, false} {
			want := run(false, tel, 1)
			var clipped, updClipped, skipped bool
			for _, r := range want.rs {
				clipped, updClipped, skipped = clipped || r.GradClipped, updClipped || r.UpdateClipped, skipped || r.Skipped
			}
			if clipped != tc.wantClip || updClipped != tc.wantUpdate || skipped != tc.wantSkip {
				t.Errorf("%s: grad clipped %v, update clipped %v, skipped %v; the case wants %v %v %v",
					tc.name, clipped, updClipped, skipped, tc.wantClip, tc.wantUpdate, tc.wantSkip)
			}
			if tc.nanParam != (want.errs[0] != "<nil>") {
				t.Errorf("%s: first step's error %s", tc.name, want.errs[0])
			}
			for _, threads := range []int{1, 3} {
				got := run(true, tel, threads)
				where := fmt.Sprintf("%s (telemetry %v, %d threads)", tc.name, tel, threads)
				for s := range want.rs {
					if !sameResult(got.rs[s], want.rs[s]) || got.errs[s] != want.errs[s] {
						t.Errorf("%s step %d: assembly %+v (%s), Go %+v (%s)", where, s, got.rs[s], got.errs[s], want.rs[s], want.errs[s])
					}
					for i := range want.sq[s] {
						a, b := got.sq[s][i], want.sq[s][i]
						if !sameF64(a.Update, b.Update) || !sameF64(a.Param, b.Param) || !sameF64(a.M, b.M) || !sameF64(a.V, b.V) {
							t.Errorf("%s step %d span %s: squares %+v, Go %+v", where, s, tc.spans[i].Name, a, b)
						}
					}
				}
				for _, x := range []struct {
					name string
					a, b []float32
				}{{"params", got.p, want.p}, {"M", got.m, want.m}, {"V", got.v, want.v}} {
					if i := bits32(x.a, x.b); i >= 0 {
						t.Errorf("%s: %s[%d] = %g (%#x), Go %g (%#x)", where, x.name, i, x.a[i], math.Float32bits(x.a[i]), x.b[i], math.Float32bits(x.b[i]))
					}
				}
			}
		}
	}
}
