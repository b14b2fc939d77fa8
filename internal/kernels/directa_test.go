package kernels

import (
	"math"
	"math/rand"
	"testing"
)

// TestSgemmDirectABitIdentical checks that reading op(A) in place (A, or
// Aᵀ as k-major strips, without a copy) gives bit-for-bit the products of
// the packed path, on shapes with ragged bottom and right edges, the m- and
// n-splits and several kc slices, on 1 and 2 threads.
func TestSgemmDirectABitIdentical(t *testing.T) {
	shapes := []struct{ m, n, k, pad int }{
		{29, 45, 70, 0}, {2048 / 16, 256, 256, 0}, {171, 97, 1100, 3}, {5, 400, 33, 1}, {14, 32, 512, 0},
		{60, 64, 2040, 24}, // lda 2,064 when not transposed: in place only by directASpread
	}
	forEachImpl(t, func(t *testing.T) {
		if kern.rowsFn == nil {
			t.Skip("this kernel always packs A")
		}
		for _, threads := range []int{1, 2} {
			setTestThreads(t, threads)
			for i, s := range shapes {
				for _, transA := range []bool{false, true} {
					r := rand.New(rand.NewSource(int64(i + 1)))
					// op(A) is m×k: A is m×k, or k×m when transposed.
					lda, aRows := s.k+s.pad, s.m
					if transA {
						lda, aRows = s.m+s.pad, s.k
					}
					ldb, ldc := s.n+s.pad, s.n+s.pad
					a, b := randSlice(r, aRows*lda), randSlice(r, s.k*ldb)
					c0 := randSlice(r, s.m*ldc)
					run := func(stride int) []float32 {
						old, oldT, oldS := directARowStride, directATransStride, directASpread
						directARowStride, directATransStride, directASpread = stride, stride, stride > 0
						defer func() { directARowStride, directATransStride, directASpread = old, oldT, oldS }()
						c := append([]float32(nil), c0...)
						Sgemm(transA, false, s.m, s.n, s.k, 1.5, a, lda, b, ldb, 0.5, c, ldc)
						return c
					}
					packed, direct := run(0), run(1<<30)
					for j := range packed {
						if math.Float32bits(packed[j]) != math.Float32bits(direct[j]) {
							t.Fatalf("%d threads, transA %v, %dx%dx%d: C[%d] = %g in place, %g packed", threads, transA, s.m, s.n, s.k, j, direct[j], packed[j])
						}
					}
				}
			}
		}
	})
}

func randSlice(r *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	return x
}

// TestPaddedStrideReadInPlace: every stride PaddedStride gives is at least
// n, a whole number of cache lines, and one the GEMM reads in place.
func TestPaddedStrideReadInPlace(t *testing.T) {
	// any kernel with a bottom-edge variant reads A in place
	kn := &gemmKernel{rowsFn: func(int, int, []float32, int, int, []float32, []float32, int, float32, float32) {}}
	for _, n := range []int{1, 15, 16, 300, 1000, 1024, 1536, 8192, 8199, 32768, 50257, 50304} {
		ld := PaddedStride(n)
		g := gemmCtx{k: kn, lda: ld}
		if ld < n || ld%16 != 0 || !g.directA() {
			t.Errorf("PaddedStride(%d) = %d: want ≥ %[1]d, a multiple of 16, read in place", n, ld)
		}
	}
}
