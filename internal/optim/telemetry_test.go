package optim

import (
	"math"
	"slices"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/kernels"
)

// telemetrySpans lays out n parameters as uneven tensors of all kinds, so
// spans straddle chunks and chunks hold several spans.
func telemetrySpans() (int, []Span) {
	sizes := []int{3*chunkSize + 17, 5, 130, chunkSize - 1, 2*chunkSize + 999, 64, 7}
	kinds := []string{"embedding", "norm", "bias", "matrix", "matrix", "norm", "matrix"}
	var spans []Span
	off := 0
	for i, s := range sizes {
		spans = append(spans, Span{Name: string(rune('a' + i)), Offset: off, Size: s, Kind: kinds[i]})
		off += s
	}
	return off, spans
}

func telemetryInputs(n, step int) (g []float32) {
	g = make([]float32, n)
	for i := range g {
		g[i] = float32((i*7+step*13)%23-11) * 1e-3 * float32(1+i%5)
	}
	return g
}

// TestSpanSquaresAddUp: the per-span sums of squares of update, params and
// both moments add up to the global norms (to float rounding), and the
// moment norms equal a direct computation over M and V.
func TestSpanSquaresAddUp(t *testing.T) {
	for _, name := range []string{"adamw", "nadamw", "adamc"} {
		t.Run(name, func(t *testing.T) { spanSquaresAddUp(t, name) })
	}
}

func spanSquaresAddUp(t *testing.T, name string) {
	n, spans := telemetrySpans()
	c := DefaultConfig()
	c.WeightDecay, c.Name = 0.1, name
	o, err := NewAdamW(c, n, spans)
	if err != nil {
		t.Fatal(err)
	}
	p := make([]float32, n)
	for i := range p {
		p[i] = float32(i%13-6) * 0.01
	}
	for step := 0; step < 3; step++ {
		r, err := o.Step(p, telemetryInputs(n, step), 2, 1e-3)
		if err != nil {
			t.Fatal(err)
		}
		sq := o.SpanSquares()
		if len(sq) != len(spans) {
			t.Fatalf("%d span squares for %d spans", len(sq), len(spans))
		}
		var u, pn, m, v float64
		for i, q := range sq {
			if q.Update <= 0 || q.Param < 0 || q.M <= 0 || q.V <= 0 {
				t.Errorf("step %d span %s: %+v", step, spans[i].Name, q)
			}
			u += q.Update
			pn += q.Param
			m += q.M
			v += q.V
		}
		var dm, dv float64
		for i := range o.M {
			dm += float64(o.M[i]) * float64(o.M[i])
			dv += float64(o.V[i]) * float64(o.V[i])
		}
		for _, x := range []struct {
			name      string
			got, want float64
		}{
			{"update", math.Sqrt(u), r.UpdateNorm}, {"param", math.Sqrt(pn), r.ParamNorm},
			{"m", math.Sqrt(m), math.Sqrt(dm)}, {"v", math.Sqrt(v), math.Sqrt(dv)},
			{"adam_m_norm", r.AdamMNorm, math.Sqrt(dm)}, {"adam_v_norm", r.AdamVNorm, math.Sqrt(dv)},
		} {
			if math.Abs(x.got-x.want) > 1e-12*x.want || x.want == 0 {
				t.Errorf("step %d %s: per-span total %.17g, global %.17g", step, x.name, x.got, x.want)
			}
		}
	}
}

// TestTelemetryKeepsStepBitIdentical: with per-span telemetry on, the
// results (norms, clipping) and the new params and moments are bit-identical
// to the step without it, and the span squares do not depend on the number
// of threads.
func TestTelemetryKeepsStepBitIdentical(t *testing.T) {
	for _, name := range []string{"adamw", "nadamw", "adamc"} {
		t.Run(name, func(t *testing.T) { telemetryKeepsStepBitIdentical(t, name) })
	}
}

func telemetryKeepsStepBitIdentical(t *testing.T, name string) {
	defer kernels.SetThreads(kernels.Threads())
	n, spans := telemetrySpans()
	c := DefaultConfig()
	c.Name = name
	c.ClipUpdateNorm, c.UpdateMinSteps, c.UpdateSigma = true, 2, 1e-3 // the update norm feeds the step
	c.MaxGradNorm = 0.5                                               // and the gradient clipped at times
	type run struct {
		p, m, v []float32
		rs      []Result
		sq      [][]SpanSquares
	}
	do := func(tel bool, threads int) run {
		kernels.SetThreads(threads)
		o, err := NewAdamW(c, n, spans)
		if err != nil {
			t.Fatal(err)
		}
		o.noTelemetry = !tel
		p := make([]float32, n)
		for i := range p {
			p[i] = float32(i%13-6) * 0.01
		}
		var out run
		for step := 0; step < 6; step++ {
			g := telemetryInputs(n, step)
			if step < 4 {
				clear(g[1000:]) // then all parameters move at once: an update-norm spike, clipped
			}
			r, err := o.Step(p, g, 2, 1e-3)
			if err != nil {
				t.Fatal(err)
			}
			out.rs = append(out.rs, r)
			out.sq = append(out.sq, slices.Clone(o.SpanSquares()))
		}
		out.p, out.m, out.v = p, o.M, o.V
		return out
	}
	off := do(false, 1)
	if !slices.ContainsFunc(off.rs, func(r Result) bool { return r.UpdateClipped }) || !slices.ContainsFunc(off.rs, func(r Result) bool { return r.GradClipped }) {
		t.Fatalf("no update or no gradient was clipped: the test does not cover it: %+v", off.rs)
	}
	for _, threads := range []int{1, 2, 3} {
		on := do(true, threads)
		for i := range on.rs {
			a, b := on.rs[i], off.rs[i]
			a.AdamMNorm, a.AdamVNorm = 0, 0
			if a != b {
				t.Errorf("threads %d step %d: result %+v with telemetry, %+v without", threads, i, a, b)
			}
		}
		if !slices.Equal(on.p, off.p) || !slices.Equal(on.m, off.m) || !slices.Equal(on.v, off.v) {
			t.Errorf("threads %d: params or moments differ with telemetry", threads)
		}
		if threads > 1 {
			ref := do(true, 1)
			for i := range on.sq {
				if !slices.Equal(on.sq[i], ref.sq[i]) {
					t.Errorf("threads %d step %d: span squares differ from one thread", threads, i)
				}
			}
		}
	}
}

// TestSpanSquaresSkippedStep: a skipped step zeroes the update and param
// parts (as the global norms are zero) and keeps the moments'.
func TestSpanSquaresSkippedStep(t *testing.T) {
	c := quietCfg()
	c.SkipBadSteps, c.SkipWindow, c.SkipMinSteps = true, 16, 8
	o, _ := NewAdamW(c, 3, []Span{{Name: "w", Size: 3, Kind: "matrix"}})
	p := []float32{1, 2, 3}
	var last Result
	for i := 0; i < 8; i++ {
		last, _ = o.Step(p, []float32{0.1, -0.1, 0.1 + 0.01*float32(i%3)}, 2+0.01*float64(i%3), 1e-2)
	}
	r, err := o.Step(p, []float32{0.1, -0.1, 0.1}, 50, 1e-2)
	if err != nil || !r.Skipped {
		t.Fatalf("not skipped: %+v %v", r, err)
	}
	q := o.SpanSquares()[0]
	if q.Update != 0 || q.Param != 0 || r.AdamMNorm != last.AdamMNorm || r.AdamVNorm != last.AdamVNorm || r.AdamMNorm == 0 {
		t.Errorf("skipped step: %+v, adam norms %g %g (before %g %g)", q, r.AdamMNorm, r.AdamVNorm, last.AdamMNorm, last.AdamVNorm)
	}
}
