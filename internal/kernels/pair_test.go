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

// TestSgemmPairRowSharing: with row sharing (the thread done with its own
// product takes row chunks of the other's), each product of a pair equals
// Sgemm on one thread bit for bit, for every layout, ragged edges (rows
// not a multiple of the tile, columns not of the strip), several kc
// slices, alpha and beta (beta 0 over a C of NaNs, beta 1 adding, where a
// chunk computed twice or skipped shows), on 1–3 threads, and with the
// pool busy (the pair then runs on the caller alone).
func TestSgemmPairRowSharing(t *testing.T) {
	savedMin := pairMinFlops
	t.Cleanup(func() { pairMinFlops = savedMin })
	pairMinFlops = 1
	r := rand.New(rand.NewSource(17))
	nan := float32(math.NaN())
	type prod struct {
		tA, tB      bool
		m, n, k     int
		alpha, beta float32
	}
	mk := func(p prod) GemmArgs {
		lda, ldb := p.k, p.n
		if p.tA {
			lda = p.m
		}
		if p.tB {
			ldb = p.k
		}
		c := randVec(r, p.m*p.n)
		if p.beta == 0 {
			for i := range c {
				c[i] = nan
			}
		}
		return GemmArgs{TransA: p.tA, TransB: p.tB, M: p.m, N: p.n, K: p.k, Alpha: p.alpha, A: randVec(r, p.m*p.k), Lda: lda, B: randVec(r, p.k*p.n), Ldb: ldb, Beta: p.beta, C: c, Ldc: p.n}
	}
	cases := []struct {
		name string
		x, y prod
	}{
		{"backward qkv NN+TN", prod{false, false, 384, 128, 384, 1, 1}, prod{true, false, 384, 128, 384, 1, 1}},
		{"gate_up dx two kc slices", prod{false, false, 384, 128, 768, 1, 0}, prod{true, false, 768, 128, 384, 1, 1}},
		{"ragged NT+TT", prod{false, true, 101, 77, 53, 0.5, 0}, prod{true, true, 59, 45, 130, -2, 1}},
		{"unequal costs", prod{false, false, 30, 40, 20, 1, 1}, prod{true, false, 395, 130, 600, 1.5, 0.25}},
		{"one row", prod{false, false, 1, 200, 300, 1, 0}, prod{false, true, 211, 33, 70, 1, 1}},
	}
	for _, tc := range cases {
		x0, y0 := mk(tc.x), mk(tc.y)
		setTestThreads(t, 1)
		want := [2][]float32{}
		for i, g := range []GemmArgs{x0, y0} {
			g.C = append([]float32(nil), g.C...)
			g.Sgemm()
			want[i] = g.C
		}
		for _, threads := range []int{1, 2, 3} {
			for _, busy := range []bool{false, true} {
				setTestThreads(t, threads)
				x, y := x0, y0
				x.C, y.C = append([]float32(nil), x0.C...), append([]float32(nil), y0.C...)
				if busy {
					p := currentPool()
					p.mu.Lock()
					SgemmPair(x, y)
					p.mu.Unlock()
				} else {
					SgemmPair(x, y)
				}
				for i, got := range [2][]float32{x.C, y.C} {
					for j := range got {
						if math.Float32bits(got[j]) != math.Float32bits(want[i][j]) {
							t.Fatalf("%s, %d threads, pool busy %v: product %d C[%d] = %v, one thread gives %v", tc.name, threads, busy, i, j, got[j], want[i][j])
						}
					}
				}
			}
		}
	}
}

// TestSgemmPairTakesOtherRows: when one product of a pair is much cheaper,
// its thread goes on to row chunks of the other product instead of
// waiting for it (before row sharing each product ran whole on one
// thread, and none were taken).
func TestSgemmPairTakesOtherRows(t *testing.T) {
	setTestThreads(t, 2)
	savedMin := pairMinFlops
	t.Cleanup(func() { pairMinFlops = savedMin })
	pairMinFlops = 1
	r := rand.New(rand.NewSource(23))
	x := GemmArgs{M: 28, N: 32, K: 32, Alpha: 1, A: randVec(r, 28*32), Lda: 32, B: randVec(r, 32*32), Ldb: 32, C: make([]float32, 28*32), Ldc: 32}
	y := GemmArgs{M: 384, N: 128, K: 384, Alpha: 1, A: randVec(r, 384*384), Lda: 384, B: randVec(r, 384*128), Ldb: 128, C: make([]float32, 384*128), Ldc: 128}
	before := pairStolen.Load()
	for i := 0; i < 20 && pairStolen.Load() == before; i++ {
		SgemmPair(x, y)
	}
	if pairStolen.Load() == before {
		t.Fatal("in 20 pairs of a 28×32×32 and a 384×128×384 product, no row chunk of the larger was taken by the other thread")
	}
}
