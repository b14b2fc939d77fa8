package kernels

import (
	"math"
	"math/rand"
	"testing"
)

// TestSgemmAllSlicesBitIdentical checks that runAllSlices (every kc slice
// of op(B) packed up front, each row block of C run through the slices)
// gives bit-for-bit the products of the slice-by-slice order, for every
// layout, ragged edges, beta 0 and not, with A read in place and packed,
// on 2 and 3 threads.
func TestSgemmAllSlicesBitIdentical(t *testing.T) {
	shapes := []struct{ m, n, k int }{
		{256, 256, 2048}, {29, 45, 1100}, {171, 97, 1025}, {5, 400, 600}, {300, 33, 1537},
	}
	forEachImpl(t, func(t *testing.T) {
		for _, threads := range []int{2, 3} {
			setTestThreads(t, threads)
			for i, s := range shapes {
				for _, tr := range [][2]bool{{false, false}, {false, true}, {true, false}, {true, true}} {
					for _, beta := range []float32{0, 0.5} {
						r := rand.New(rand.NewSource(int64(i + 1)))
						ta, tb := tr[0], tr[1]
						lda, ldb := s.k, s.n
						aRows, bRows := s.m, s.k
						if ta {
							lda, aRows = s.m, s.k
						}
						if tb {
							ldb, bRows = s.k, s.n
						}
						a, b := randSlice(r, aRows*lda), randSlice(r, bRows*ldb)
						c0 := randSlice(r, s.m*s.n)
						run := func(maxM int) []float32 {
							old := allSlicesMaxM
							allSlicesMaxM = maxM
							defer func() { allSlicesMaxM = old }()
							c := append([]float32(nil), c0...)
							Sgemm(ta, tb, s.m, s.n, s.k, 1.25, a, lda, b, ldb, beta, c, s.n)
							return c
						}
						bySlice, all := run(-1), run(1<<30)
						for j := range bySlice {
							if math.Float32bits(bySlice[j]) != math.Float32bits(all[j]) {
								t.Fatalf("%d threads, trans %v, beta %g, %dx%dx%d: C[%d] = %g all slices, %g slice by slice", threads, tr, beta, s.m, s.n, s.k, j, all[j], bySlice[j])
							}
						}
					}
				}
			}
		}
	})
}
