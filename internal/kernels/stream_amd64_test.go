package kernels

import (
	"math"
	"math/rand"
	"testing"
	"unsafe"
)

// aligned64 returns a zeroed slice of n floats starting on a 64-byte
// boundary.
func aligned64(n int) []float32 {
	b := make([]float32, n+16)
	off := int(uintptr(unsafe.Pointer(&b[0])) % 64 / 4)
	if off != 0 {
		off = 16 - off
	}
	return b[off : off+n]
}

// TestSgemmStreamBitIdentical: products whose C is written with streaming
// stores (full tiles; the edges as usual) equal the regular ones bit for
// bit, in every layout, on 1 and 2 threads; C that is not 64-byte aligned,
// beta ≠ 0 or several kc slices keep the regular stores.
func TestSgemmStreamBitIdentical(t *testing.T) {
	r := rand.New(rand.NewSource(5))
	savedMin := streamMinFloats
	t.Cleanup(func() { streamMinFloats = savedMin })
	for _, threads := range []int{1, 2} {
		setTestThreads(t, threads)
		for _, tc := range []struct {
			ta, tb  bool
			m, n, k int
			ldc     int
		}{
			{false, true, 50, 100, 64, 112}, {false, false, 29, 64, 33, 64}, {true, false, 70, 96, 300, 96},
			{false, true, 14, 32, 7, 32}, {false, true, 300, 200, 1100, 208},
		} {
			a := make([]float32, tc.m*tc.k)
			b := make([]float32, tc.k*tc.n)
			for i := range a {
				a[i] = float32(r.NormFloat64())
			}
			for i := range b {
				b[i] = float32(r.NormFloat64())
			}
			lda, ldb := tc.k, tc.n
			if tc.ta {
				lda = tc.m
			}
			if tc.tb {
				ldb = tc.k
			}
			run := func(stream bool, c []float32) []float32 {
				streamMinFloats = math.MaxInt
				if stream {
					streamMinFloats = 0
				}
				for i := range c {
					c[i] = float32(math.NaN()) // beta 0: never read
				}
				Sgemm(tc.ta, tc.tb, tc.m, tc.n, tc.k, 0.75, a, lda, b, ldb, 0, c, tc.ldc)
				return c
			}
			want := run(false, aligned64(tc.m*tc.ldc))
			got := run(true, aligned64(tc.m*tc.ldc))
			for i := 0; i < tc.m; i++ {
				for j := 0; j < tc.n; j++ {
					if math.Float32bits(got[i*tc.ldc+j]) != math.Float32bits(want[i*tc.ldc+j]) {
						t.Fatalf("%+v threads %d: C[%d,%d] = %v streamed, %v regular", tc, threads, i, j, got[i*tc.ldc+j], want[i*tc.ldc+j])
					}
				}
			}
		}
	}
	// when streaming applies
	streamMinFloats = 0
	g := &gemmCtx{k: kernelAVX512, m: 28, n: 64, kk: 64, ldc: 64, c: aligned64(28 * 64)}
	if hasAVX512() && !streamC(g) {
		t.Error("aligned, beta 0, one slice: not streamed")
	}
	g.c = g.c[1:]
	if streamC(g) {
		t.Error("C not 64-byte aligned: streamed")
	}
	g.c, g.beta = aligned64(28*64), 1
	if streamC(g) {
		t.Error("beta 1: streamed")
	}
	g.beta, g.kk = 0, kernelAVX512.kc+1
	if streamC(g) {
		t.Error("two kc slices: streamed")
	}
}
