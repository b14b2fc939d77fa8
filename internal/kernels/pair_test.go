package kernels

import (
	"math"
	"math/rand"
	"testing"
)

// TestSgemmPairBitIdentical: the two products of SgemmPair equal two plain
// Sgemm calls bit for bit, whether the pair runs side by side (two threads,
// mid-sized products), one after the other (one thread, or a product over
// pairMaxFlops), and for every layout.
func TestSgemmPairBitIdentical(t *testing.T) {
	r := rand.New(rand.NewSource(11))
	rnd := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(r.NormFloat64())
		}
		return v
	}
	// operands of a backward pass: dx = dy·W (beta 0 or 1), dW += dyᵀ·x
	mk := func(N, in, out int, beta float32) (dX, dW GemmArgs) {
		dy, x, w := rnd(N*out), rnd(N*in), rnd(out*in)
		dX = GemmArgs{M: N, N: in, K: out, Alpha: 1, A: dy, Lda: out, B: w, Ldb: in, Beta: beta, C: rnd(N * in), Ldc: in}
		dW = GemmArgs{TransA: true, M: out, N: in, K: N, Alpha: 1, A: dy, Lda: out, B: x, Ldb: in, Beta: 1, C: rnd(out * in), Ldc: in}
		return dX, dW
	}
	clone := func(g GemmArgs) GemmArgs {
		g.C = append([]float32(nil), g.C...)
		return g
	}
	savedMax := pairMaxFlops
	t.Cleanup(func() { pairMaxFlops = savedMax })
	for _, tc := range []struct {
		name       string
		threads    int
		N, in, out int
		beta       float32
		maxFlops   int
		nt         bool // y is an NT product instead
	}{
		{"side by side", 2, 300, 96, 200, 0, savedMax, false},
		{"side by side, accumulate", 2, 257, 130, 75, 1, savedMax, false},
		{"side by side, NT", 2, 190, 64, 150, 0, savedMax, true},
		{"one thread", 1, 300, 96, 200, 0, savedMax, false},
		{"too large to pair", 2, 300, 96, 200, 1, 1000, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			setTestThreads(t, tc.threads)
			pairMaxFlops = tc.maxFlops
			x, y := mk(tc.N, tc.in, tc.out, tc.beta)
			if tc.nt {
				y = GemmArgs{TransB: true, M: tc.N, N: tc.out, K: tc.in, Alpha: 0.5, A: rnd(tc.N * tc.in), Lda: tc.in, B: rnd(tc.out * tc.in), Ldb: tc.in, C: rnd(tc.N * tc.out), Ldc: tc.out}
			}
			wx, wy := clone(x), clone(y)
			wx.Sgemm()
			wy.Sgemm()
			SgemmPair(x, y)
			for _, p := range []struct {
				name      string
				got, want []float32
			}{{"x", x.C, wx.C}, {"y", y.C, wy.C}} {
				for i := range p.got {
					if math.Float32bits(p.got[i]) != math.Float32bits(p.want[i]) {
						t.Fatalf("%s: C[%d] = %v, Sgemm gives %v", p.name, i, p.got[i], p.want[i])
					}
				}
			}
		})
	}
}

// TestSgemmPairZeroAllocs: side by side, a steady-state pair allocates
// nothing (the task and the products' contexts come from free lists), in
// race-detector builds too.
func TestSgemmPairZeroAllocs(t *testing.T) {
	setTestThreads(t, 2)
	m, n, k := 128, 96, 64
	x := GemmArgs{M: m, N: n, K: k, Alpha: 1, A: make([]float32, m*k), Lda: k, B: make([]float32, k*n), Ldb: n, C: make([]float32, m*n), Ldc: n}
	y := x
	y.C = make([]float32, m*n)
	savedMin := pairMinFlops
	t.Cleanup(func() { pairMinFlops = savedMin })
	pairMinFlops = 1
	SgemmPair(x, y)
	if a := testing.AllocsPerRun(20, func() { SgemmPair(x, y) }); a != 0 {
		t.Fatalf("%v allocations per pair, want 0", a)
	}
}
