package kernels

import (
	"math"
	"math/rand"
	"strings"
	"testing"
)

// TestSgemmPackedBBitIdentical: products of op(A) row chunks with a
// PackedB equal Sgemm's on the whole A bit for bit (ragged edges, several
// kc slices and nc panels, op(A) and op(B) transposed or not, alpha and
// beta ≠ 1, a C row stride wider than n), on every implementation at 1 and
// 2 threads (2: the parallel paths even for small shapes, rows or columns
// shared out, the latter across nc panels).
func TestSgemmPackedBBitIdentical(t *testing.T) {
	shapes := []struct{ m, n, k, pad, chunk int }{
		{29, 45, 70, 0, 29}, {300, 256, 1100, 3, 112}, {171, 97, 33, 1, 50}, {5, 4200, 20, 0, 3}, {14, 32, 512, 0, 14},
		{64, 9000, 256, 0, 40}, {300, 5000, 100, 2, 170}, // columns shared out across nc panels
	}
	forEachImpl(t, func(t *testing.T) {
		for _, threads := range []int{1, 2} {
			setTestThreads(t, threads)
			for i, s := range shapes {
				for _, tA := range []bool{false, true} {
					for _, tB := range []bool{false, true} {
						r := rand.New(rand.NewSource(int64(i + 1)))
						ldc := s.n + s.pad
						lda, ldb := s.k+s.pad, s.n+s.pad
						aLen, bLen := s.m*lda, s.k*ldb
						if tA {
							lda = s.m + s.pad
							aLen = s.k * lda
						}
						if tB {
							ldb = s.k + s.pad
							bLen = s.n * ldb
						}
						a, b := randSlice(r, aLen), randSlice(r, bLen)
						c0 := randSlice(r, s.m*ldc)
						want := append([]float32(nil), c0...)
						Sgemm(tA, tB, s.m, s.n, s.k, 1.5, a, lda, b, ldb, 0.5, want, ldc)
						var p PackedB
						p.Pack(tB, s.k, s.n, b, ldb)
						if len(p.buf) != PackedBSize(s.k, s.n) {
							t.Fatalf("packed %d floats, PackedBSize %d", len(p.buf), PackedBSize(s.k, s.n))
						}
						got := append([]float32(nil), c0...)
						for r0 := 0; r0 < s.m; r0 += s.chunk {
							r1 := min(s.m, r0+s.chunk)
							var ap []float32
							if tA {
								ap = a[r0:] // columns r0.. of Aᵀ
							} else {
								ap = a[r0*lda:] // rows r0.. of A
							}
							SgemmPackedB(tA, r1-r0, 1.5, ap, lda, &p, 0.5, got[r0*ldc:], ldc)
						}
						for j := range want {
							if math.Float32bits(got[j]) != math.Float32bits(want[j]) {
								t.Fatalf("%d threads, %dx%dx%d tA=%v tB=%v chunks of %d: C[%d] = %g, Sgemm %g",
									threads, s.m, s.n, s.k, tA, tB, s.chunk, j, got[j], want[j])
							}
						}
					}
				}
			}
		}
	})
}

// TestSgemmPackedBRefusesOtherKernel: a PackedB packed by one
// implementation is refused after a switch (the strips would be the wrong
// width), and an empty one is refused.
func TestSgemmPackedBRefusesOtherKernel(t *testing.T) {
	saved := kern
	defer useKernel(saved)
	b := make([]float32, 64)
	c := make([]float32, 64)
	for _, tc := range []struct {
		name string
		prep func(*PackedB)
	}{
		{"empty", func(*PackedB) {}},
		{"switched", func(p *PackedB) {
			useKernel(kernelGo)
			p.Pack(false, 8, 8, b, 8)
			useKernel(&gemmKernel{name: "other", mr: 4, nr: 4, kc: 4, mc: 4, nc: 4, fn: kernel4x4Go})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var p PackedB
			tc.prep(&p)
			defer func() {
				if r := recover(); r == nil || !strings.Contains(r.(string), "another GEMM implementation") {
					t.Fatalf("recovered %v, want a panic naming the switch", r)
				}
			}()
			SgemmPackedB(false, 8, 1, b, 8, &p, 0, c, 8)
		})
	}
}
