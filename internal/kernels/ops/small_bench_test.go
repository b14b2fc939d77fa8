package ops

import (
	"math/rand/v2"
	"testing"
)

// smallLayers is the number of layers whose buffers the small-model
// benchmarks rotate through, so that each pass finds its inputs where a
// training step does (in L2/L3, not in L1).
const smallLayers = 4

var sink float64

// BenchmarkSmallElem times the elementwise passes of one shakespeare-char
// layer on one thread (micro-batch 6×64 = 384 rows, d 128, 4 heads of 32
// for q and k, SwiGLU 384): RMSNorm forward and backward, RoPE on the q
// and k heads, SwiGLU forward and backward, and the residual stream's
// vitals (SumSquares64, CountOutside). Run with -test.cpu 1.
func BenchmarkSmallElem(b *testing.B) {
	const N, D, F, hd, nh = 384, 128, 384, 32, 8
	const stride = 3 * 4 * hd
	r := rand.New(rand.NewPCG(3, 4))
	type layer struct{ x, y, dy, dx, w, rstd, part, qkv, gu, sig, h, dh, dgu []float32 }
	ls := make([]layer, smallLayers)
	for i := range ls {
		ls[i] = layer{x: randVec(r, N*D, 1), y: make([]float32, N*D), dy: randVec(r, N*D, 1), dx: make([]float32, N*D),
			w: randVec(r, D, 1), rstd: make([]float32, N), part: make([]float32, D), qkv: randVec(r, N*stride, 1),
			gu: randVec(r, N*2*F, 2), sig: make([]float32, N*F), h: make([]float32, N*F), dh: randVec(r, N*F, 1),
			dgu: make([]float32, N*2*F)}
	}
	cos, sin := make([]float32, 64*hd/2), make([]float32, 64*hd/2)
	RoPETables(cos, sin, 64, hd, 10000)
	cases := []struct {
		name string
		f    func(l *layer)
	}{
		{"rmsnorm_fwd", func(l *layer) { RMSNormForward(l.y, l.rstd, l.x, l.w, D, 1e-5, 0, N) }},
		{"rmsnorm_back", func(l *layer) { RMSNormBackward(l.dx, l.part, l.dy, l.x, l.w, l.rstd, D, 0, N) }},
		{"rope_fwd", func(l *layer) { RoPEForward(l.qkv, cos, sin, 64, stride, 0, nh, hd, 0, N) }},
		{"rope_back", func(l *layer) { RoPEBackward(l.qkv, cos, sin, 64, stride, 0, nh, hd, 0, N) }},
		{"swiglu_fwd", func(l *layer) { SwiGLUForward(l.h, l.sig, l.gu, F, 0, N) }},
		{"swiglu_back", func(l *layer) { SwiGLUBackward(l.dgu, l.dh, l.gu, l.sig, F, 0, N) }},
		{"resid_vitals", func(l *layer) {
			s, ss := SumSquares64(l.x)
			sink = float64(CountOutside(l.x, -3, 3)) + s + ss
		}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			for i := range ls {
				c.f(&ls[i])
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				c.f(&ls[i%smallLayers])
			}
		})
	}
}
