package optim

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/kernels"
)

// TestStepEMAFoldedBitIdentical: StepEMA, which folds the EMA update into
// the θ pass of the double-buffered step, leaves the params, M, V, the EMA
// weights and every Result field bit for bit as Step followed by
// ema.Update (the separate passes, through the Go loops and the
// recomputing pass 2) does, step after step: odd sizes and parameters
// outside every span, a skipped step and refused steps (the EMA must not
// move on either), telemetry on and off, 1 and 2 threads, the AVX-512
// kernels and the Go loops; and EMAFolded is set exactly on the applied
// steps of the storing path.
func TestStepEMAFoldedBitIdentical(t *testing.T) {
	defer func(v bool) { useAVX512 = v }(useAVX512)
	defer func(v int) { storeMaxParams = v }(storeMaxParams)
	defer kernels.SetThreads(kernels.Threads())
	hasAVX := useAVX512

	tiny, nTiny := asmLayout(0, 1, 3, 7, 0, 8, 9, 15, 17, 0, 31, 100, 257, 2)
	shifted, nShifted := asmLayout(3, 5*chunkSize+13, 1, 0, 2*chunkSize-7)
	base := DefaultConfig() // update clipping and skip-step on, as in training
	base.UpdateMinSteps, base.SkipWindow, base.SkipMinSteps, base.SkipSigma = 2, 8, 3, 2
	cases := []struct {
		name     string
		spans    []Span
		n        int
		refuseAt int // an Inf gradient at this step, an Inf θ at the next (then restored)
		spikeAt  int // the loss is 100 here: a skipped step
	}{
		{name: "tiny spans and gaps", spans: tiny, n: nTiny, spikeAt: 5},
		{name: "shifted chunks, refused steps", spans: shifted, n: nShifted, refuseAt: 2, spikeAt: 6},
	}
	run := func(c Config, spans []Span, n, refuseAt, spikeAt int, fold, asm, tel bool, threads int) (p, m, v, w []float32, rs []Result, errs []string) {
		useAVX512 = asm
		storeMaxParams = 0
		if fold {
			storeMaxParams = 1 << 24
		}
		kernels.SetThreads(threads)
		o, err := NewAdamW(c, n, spans)
		if err != nil {
			t.Fatal(err)
		}
		o.noTelemetry = !tel
		p = asmGrads(n, spans, 99, -2, 0)
		ema := NewEMA(0.995, p)
		for i := range ema.W {
			ema.W[i] *= 0.5 // away from θ: an update that is skipped shows (the gaps' θ never moves)
		}
		for s := range 8 {
			g := asmGrads(n, spans, uint64(s), -3, -1)
			loss := 2 + 0.01*float64(s%3)
			if s == spikeAt {
				loss = 100
			}
			at, keep := spans[0].Offset+spans[0].Size/2, float32(0)
			switch {
			case refuseAt > 0 && s == refuseAt:
				g[at] = float32(math.Inf(1))
			case refuseAt > 0 && s == refuseAt+1:
				keep, p[at] = p[at], float32(math.Inf(-1))
			}
			var r Result
			if fold {
				r, err = o.StepEMA(p, g, loss, 1e-2, ema)
			} else {
				r, err = o.Step(p, g, loss, 1e-2)
			}
			if refuseAt > 0 && s == refuseAt+1 {
				p[at] = keep
			}
			if err == nil && !r.Skipped && !r.EMAFolded {
				ema.Update(p)
			}
			rs, errs = append(rs, r), append(errs, fmt.Sprint(err))
		}
		useAVX512 = hasAVX
		return p, o.M, o.V, ema.W, rs, errs
	}
	for _, tc := range cases {
		for _, tel := range []bool{true, false} {
			wp, wm, wv, ww, wr, we := run(base, tc.spans, tc.n, tc.refuseAt, tc.spikeAt, false, false, tel, 1)
			if !wr[tc.spikeAt].Skipped {
				t.Fatalf("%s: step %d not skipped: the case tests nothing there", tc.name, tc.spikeAt)
			}
			for _, at := range []struct {
				asm     bool
				threads int
			}{{false, 1}, {false, 2}, {true, 1}, {true, 2}} {
				if at.asm && !hasAVX {
					continue
				}
				where := fmt.Sprintf("%s (telemetry %v, assembly %v, %d threads)", tc.name, tel, at.asm, at.threads)
				p, m, v, w, rs, errs := run(base, tc.spans, tc.n, tc.refuseAt, tc.spikeAt, true, at.asm, tel, at.threads)
				for s := range wr {
					folded := rs[s].EMAFolded
					rs[s].EMAFolded = false
					if !sameResult(rs[s], wr[s]) || errs[s] != we[s] {
						t.Errorf("%s step %d: folded %+v (%s), separate %+v (%s)", where, s, rs[s], errs[s], wr[s], we[s])
					}
					// The storing path runs on AVX-512 only; elsewhere
					// the EMA is the caller's.
					if want := at.asm && errs[s] == "<nil>" && !rs[s].Skipped; folded != want {
						t.Errorf("%s step %d: EMAFolded %v, want %v", where, s, folded, want)
					}
				}
				for _, x := range []struct {
					name string
					a, b []float32
				}{{"params", p, wp}, {"M", m, wm}, {"V", v, wv}, {"EMA", w, ww}} {
					if i := bits32(x.a, x.b); i >= 0 {
						t.Errorf("%s: %s[%d] = %g (%#x), separate %g (%#x)", where, x.name, i, x.a[i], math.Float32bits(x.a[i]), x.b[i], math.Float32bits(x.b[i]))
					}
				}
			}
		}
	}
}

// TestThetaEMATies: the fused θ and EMA kernel against thetaGo then emaGo
// on inputs where θ − step·u lands on a float32 tie (the witnesses of
// TestAdamWAssemblyTies) and on large, tiny and subnormal values, at odd
// lengths: any fused or reordered operation flips a bit here.
func TestThetaEMATies(t *testing.T) {
	pTies := [][2]uint32{
		{0x3a873b45, 0x3f840fe2}, {0xbadb4725, 0xbfd6237a}, {0xbac707d4, 0xbfc25da5}, {0xbb007797, 0xbffae993},
		{0x393cada5, 0x3e384195}, {0x3a9cbb28, 0x3f990ec5}, {0xbb059c85, 0xc0027ada}, {0xba2670ec, 0xbf228a47},
	}
	const step = 1e-3
	for _, n := range []int{1, 7, 8, 9, 35, 1000} {
		p, u, w := make([]float32, n), make([]float32, n), make([]float32, n)
		for i := range p {
			switch i % 4 {
			case 0:
				p[i], u[i], w[i] = float32(i)*0.01, float32(i%13)-6, -float32(i)*0.003
			case 1:
				p[i], u[i], w[i] = 1e30, -1e33, 1e-30
			case 2:
				p[i], u[i], w[i] = float32(math.Copysign(1e-40, float64(i%3)-1)), 1e-38, 1e-41
			default:
				p[i], u[i], w[i] = -0.5, 0.25, 0.75
			}
		}
		for i, x := range pTies {
			if i < n {
				p[i], u[i] = math.Float32frombits(x[0]), math.Float32frombits(x[1])
			}
		}
		for _, beta := range []float64{0.995, 0.9999} {
			pw, ww := slices.Clone(p), slices.Clone(w)
			thetaGo(pw, u, step)
			emaGo(ww, pw, beta, 1-beta)
			pg, wg := slices.Clone(p), slices.Clone(w)
			thetaEMAUpdate(pg, u, wg, step, beta, 1-beta)
			if i := bits32(pg, pw); i >= 0 {
				t.Errorf("n %d β %v: θ[%d] = %#x, separate %#x", n, beta, i, math.Float32bits(pg[i]), math.Float32bits(pw[i]))
			}
			if i := bits32(wg, ww); i >= 0 {
				t.Errorf("n %d β %v: W[%d] = %#x, separate %#x", n, beta, i, math.Float32bits(wg[i]), math.Float32bits(ww[i]))
			}
		}
	}
}
