package optim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
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
// step, with telemetry on and off, at 1, 2 and 3 threads, through the
// double-buffered step (pass 1 stores m', v', u; pass 2 swaps) and the
// other one (pass 2 computes them again). The Go loops are the step as it
// was before either: one chunk at a time, sums in element order.
func TestAdamWAssemblyBitIdentical(t *testing.T) {
	if !useAVX512 {
		t.Skip("no AVX-512 on this CPU: only the Go loops run")
	}
	defer func(v bool) { useAVX512 = v }(useAVX512)
	defer func(v int) { storeMaxParams = v }(storeMaxParams)
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
	adamcOn := func(c *Config) { c.Name, c.LR = "adamc", 3e-2 } // the steps' lr 1e-2: weight decay × 1/3
	nadamOn := func(c *Config) { c.Name, c.NAdamMomentumDecay = "nadamw", 0.3 }

	cases := []struct {
		name       string
		spans      []Span
		n          int
		knobs      []knob
		lo, hi     float64 // gradient magnitudes 10^lo … 10^hi
		zero       []int   // spans with zero gradients on even steps
		nanParam   bool    // a NaN parameter: every step refused
		refuseAt   int     // step refusing on an Inf gradient, the next on an Inf θ (then restored); 0: none
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
		{name: "adamc, chunks, weight decay everywhere", spans: big, n: nBig, knobs: []knob{adamcOn, wdAll, updClip}, lo: -4, hi: -2, zero: []int{1}, wantUpdate: true},
		{name: "nadamw, tiny spans, grad and update clipping", spans: tiny, n: nTiny, knobs: []knob{nadamOn, gradClip, updClip}, lo: -3, hi: 0, wantClip: true, wantUpdate: true},
		{name: "nadamw, chunks, weight decay everywhere", spans: big, n: nBig, knobs: []knob{nadamOn, wdAll, updClip}, lo: -4, hi: -2, zero: []int{1}, wantUpdate: true},
		{name: "nadamw, shifted chunks, skipped step", spans: shifted, n: nShifted, knobs: []knob{nadamOn, skip}, lo: -3, hi: -2, lossSpike: 5, wantSkip: true},
		{name: "muon mixed in", spans: muon, n: nMuon, knobs: []knob{muonOn, gradClip, updClip}, lo: -3, hi: -1, zero: []int{0}, wantClip: true},
		{name: "NaN parameter", spans: tiny, n: nTiny, lo: -3, hi: -1, nanParam: true},
		{name: "refused steps mid-run, shifted chunks", spans: shifted, n: nShifted, knobs: []knob{gradClip}, lo: -3, hi: -1, refuseAt: 2, wantClip: true},
	}
	for _, tc := range cases {
		cfg := base
		for _, k := range tc.knobs {
			k(&cfg)
		}
		run := func(asm, tel, store bool, threads int) stepTrace {
			useAVX512 = asm
			storeMaxParams = 0
			if store {
				storeMaxParams = 1 << 24
			}
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
				at, keep := tc.spans[0].Offset+8*chunkSize/3, float32(0) // inside an assembly block
				switch {
				case tc.refuseAt > 0 && step == tc.refuseAt:
					g[at] = float32(math.Inf(1))
				case tc.refuseAt > 0 && step == tc.refuseAt+1:
					keep, p[at] = p[at], float32(math.Inf(-1))
				}
				r, err := o.Step(p, g, loss, 1e-2)
				if tc.refuseAt > 0 && step == tc.refuseAt+1 {
					p[at] = keep
				}
				tr.rs = append(tr.rs, r)
				tr.errs = append(tr.errs, fmt.Sprint(err))
				tr.sq = append(tr.sq, append([]SpanSquares(nil), o.SpanSquares()...))
			}
			tr.p, tr.m, tr.v = p, o.M, o.V
			useAVX512 = true
			return tr
		}
		for _, tel := range []bool{true, false} {
			want := run(false, tel, false, 1)
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
			if k := tc.refuseAt; k > 0 && (!strings.Contains(want.errs[k], "gradient norm") || !strings.Contains(want.errs[k+1], "update norm") || want.errs[k+2] != "<nil>") {
				t.Errorf("%s: steps %d…%d: errors %q, want a gradient-norm and an update-norm refusal, then a step", tc.name, k, k+2, want.errs[k:k+3])
			}
			for _, at := range []struct {
				threads int
				store   bool
			}{{1, true}, {2, true}, {3, false}} {
				got := run(true, tel, at.store, at.threads)
				where := fmt.Sprintf("%s (telemetry %v, %d threads, storing %v)", tc.name, tel, at.threads, at.store)
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

// float32Tie reports whether s lies exactly halfway between two float32
// values (in the normal range): any other rounding of the float64
// operations that produced s moves it off the tie and flips its float32
// rounding one way.
func float32Tie(s float64) bool {
	a := math.Abs(s)
	return a >= 0x1p-126 && a <= math.MaxFloat32 && math.Float64bits(s)&(1<<29-1) == 1<<28
}

// TestAdamWAssemblyTies: random inputs almost never expose a reordered or
// fused float64 operation whose result is then rounded to float32 (m, v,
// θ): the float64 results differ in the last bit, the float32 roundings
// only when the exact result lies within an ulp of a float32 tie (about
// one element in 2²⁹). These inputs were searched for so that the Go
// expression lands exactly on a tie (the test checks it) while its
// fused or reassociated variants do not, so any such change to the
// kernels flips a float32 result here.
func TestAdamWAssemblyTies(t *testing.T) {
	if !useAVX512 {
		t.Skip("no AVX-512 on this CPU: only the Go loops run")
	}
	const b1, b2, step = 0.9, 0.95, 1e-3
	k := adamConsts{gs: 1, b1: b1, c1: 1 - b1, b2: b2, c2: 1 - b2, wd: 0.1, step: step, ib1: 1.5, ib2: 1.25, eps: 1e-8}
	// Each row lands on a tie and flips under at least one of: the
	// fused β1·m + ((1−β1)·g), the fused (1−β1)·g + (β1·m), (1−β2)·(g·g),
	// the fused β2·v + ((1−β2)·g·g), the fused ((1−β2)·g)·g + (β2·v),
	// the fused θ − step·u.
	mTies := [][2]uint32{ // m, g: b1·m + (1−b1)·g is a float32 tie
		{0xba7bd583, 0x3c6dd703}, {0x3a2924af, 0xbc50c16d}, {0xba0f343a, 0xbc0c35c8},
		{0xba12f476, 0x3c77e538}, {0xba70c192, 0xbc2601d4}, {0x3a0841ed, 0xbc30187f},
		{0x389b50ae, 0xbb0fe628}, {0xbabefd9b, 0x3afed348},
	}
	vTies := [][2]uint32{ // v, g: b2·v + (1−b2)·g·g is a float32 tie
		{0x364ac799, 0x3c11ba00}, {0x365ed40c, 0xbc7c4c00}, {0x3605ed8d, 0x3c5e6e00},
		{0x35d4bfa0, 0xbc1f8c00}, {0x35d08bd8, 0xbc1d2000}, {0x35a20df8, 0xbc1e3800},
		{0x3644f5c8, 0x3c457800}, {0x35b89aa4, 0xbbb6e800}, {0x35bfbdda, 0x3c757200},
	}
	pTies := [][2]uint32{ // θ, u: θ − step·u is a float32 tie
		{0x3a873b45, 0x3f840fe2}, {0xbadb4725, 0xbfd6237a}, {0xbac707d4, 0xbfc25da5}, {0xbb007797, 0xbffae993},
		{0x393cada5, 0x3e384195}, {0x3a9cbb28, 0x3f990ec5}, {0xbb059c85, 0xc0027ada}, {0xba2670ec, 0xbf228a47},
	}
	f := math.Float32frombits
	const n = 35 // four blocks of 8 through the assembly (all the ties), 3 through Go
	g, m, v, p := make([]float32, n), make([]float32, n), make([]float32, n), make([]float32, n)
	for i := range g {
		g[i], m[i], v[i], p[i] = 1e-3, 2e-4, 3e-6, 0.01
	}
	// Explicit conversions: no FMA in the check either (GOAMD64=v3).
	for i, w := range mTies {
		m[i], g[i] = f(w[0]), f(w[1])
		if gg := float64(g[i]); !float32Tie(float64(b1*float64(m[i])) + float64((1-b1)*gg)) {
			t.Fatalf("m witness %d is not a tie", i)
		}
	}
	for i, w := range vTies {
		j := len(mTies) + i
		v[j], g[j] = f(w[0]), f(w[1])
		if gg := float64(g[j]); !float32Tie(float64(b2*float64(v[j])) + float64((1-b2)*gg*gg)) {
			t.Fatalf("v witness %d is not a tie", i)
		}
	}
	defer func(v bool) { useAVX512 = v }(useAVX512)
	for mode := range 3 {
		var accA, accG [6]float64
		adamDir(mode, g, m, v, p, &k, &accA)
		adamDirGo(mode, g, m, v, p, &k, &accG)
		for i := range accA {
			if !sameF64(accA[i], accG[i]) {
				t.Errorf("pass 1 mode %d: sum %d = %x, Go %x", mode, i, math.Float64bits(accA[i]), math.Float64bits(accG[i]))
			}
		}
	}
	commit := func(what string, k *adamConsts, g, m, v, p []float32) {
		ma, va, pa := slices.Clone(m), slices.Clone(v), slices.Clone(p)
		adamCommit(g, ma, va, pa, k)
		adamCommitGo(g, m, v, p, k)
		for _, x := range []struct {
			name string
			a, b []float32
		}{{"M", ma, m}, {"V", va, v}, {"θ", pa, p}} {
			if i := bits32(x.a, x.b); i >= 0 {
				t.Errorf("pass 2 (%s): %s[%d] = %#x, Go %#x", what, x.name, i, math.Float32bits(x.a[i]), math.Float32bits(x.b[i]))
			}
		}
	}
	commit("m, v ties", &k, g, m, v, p)
	// The θ witnesses need u itself: with g = 0, v = 1, β1 = β2 = 1 and
	// ib1 = ib2 = 1, ε = wd = 0, pass 2 computes m' = m, v' = 1 and
	// u = m'·1/(√1·1 + 0) + 0 = m exactly, so m carries u.
	ku := adamConsts{gs: 1, b1: 1, c1: 0, b2: 1, c2: 0, wd: 0, step: step, ib1: 1, ib2: 1, eps: 0}
	gu, mu, vu, pu := make([]float32, n), make([]float32, n), make([]float32, n), make([]float32, n)
	for i := range gu {
		mu[i], vu[i], pu[i] = 0.5, 1, 0.01
	}
	for i, w := range pTies {
		pu[i], mu[i] = f(w[0]), f(w[1])
		if !float32Tie(float64(pu[i]) - float64(step*float64(mu[i]))) {
			t.Fatalf("θ witness %d is not a tie", i)
		}
		if _, _, u := adamU(gu[i], mu[i], vu[i], pu[i], &ku); float32(u) != mu[i] {
			t.Fatalf("θ witness %d: u = %v, want m = %v", i, u, mu[i])
		}
	}
	commit("θ ties", &ku, gu, mu, vu, pu)
}
