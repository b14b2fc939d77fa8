package kernels

import (
	"math"
	"math/rand"
	"testing"
)

// TestSpecializedKernelsMatchGeneral: the 14×32 kernels specialised in the
// A layout (row copies, cs = 1; k-major, rs = 1) give the general kernel's
// tile bit for bit — depths that end in the unrolled loop and in each
// length of the tail, rows from 1 to 3 floats apart, k-major strides of a
// packed strip (16) and of Aᵀ read in place (128, 384, 500), alpha and
// beta (0 over NaN, 1, −0.5), C's neighbours untouched.
func TestSpecializedKernelsMatchGeneral(t *testing.T) {
	if !hasAVX512() {
		t.Skip("no AVX-512")
	}
	r := rand.New(rand.NewSource(7))
	type layout struct {
		name   string
		rs, cs func(k int) int
		fn     asmKernel
	}
	layouts := []layout{
		{"rows k+3", func(k int) int { return k + 3 }, func(int) int { return 1 }, sgemm14x32avx512rows},
		{"rows 384", func(int) int { return 384 }, func(int) int { return 1 }, sgemm14x32avx512rows},
		{"kmajor 16", func(int) int { return 1 }, func(int) int { return 16 }, sgemm14x32avx512kmaj},
		{"kmajor 14", func(int) int { return 1 }, func(int) int { return 14 }, sgemm14x32avx512kmaj},
		{"kmajor 384", func(int) int { return 1 }, func(int) int { return 384 }, sgemm14x32avx512kmaj},
		{"kmajor 500", func(int) int { return 1 }, func(int) int { return 500 }, sgemm14x32avx512kmaj},
	}
	for _, ly := range layouts {
		for _, k := range []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 13, 128, 383, 384, 512} {
			for _, ab := range [][2]float32{{1, 0}, {1, 1}, {1.25, -0.5}} {
				rs, cs := ly.rs(k), ly.cs(k)
				if rs == 384 && k > 384 {
					continue
				}
				ap, bp := randVec(r, 13*rs+(k-1)*cs+1), randVec(r, 32*k)
				const ldc = 40
				c := randVec(r, 14*ldc)
				if ab[1] == 0 {
					for i := range c {
						c[i] = float32(math.NaN())
					}
				}
				want := append([]float32(nil), c...)
				sgemm14x32avx512(k, &ap[0], rs, cs, &bp[0], &want[0], ldc, ab[0], ab[1])
				ly.fn(k, &ap[0], rs, cs, &bp[0], &c[0], ldc, ab[0], ab[1])
				for i := range c {
					if math.Float32bits(c[i]) != math.Float32bits(want[i]) {
						t.Fatalf("%s k=%d alpha %g beta %g: c[%d] (row %d col %d) = %v, the general kernel gives %v",
							ly.name, k, ab[0], ab[1], i, i/ldc, i%ldc, c[i], want[i])
					}
				}
			}
		}
	}
}
