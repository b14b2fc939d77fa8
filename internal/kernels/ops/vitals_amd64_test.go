package ops

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestVitalsVectorMatchesGo checks SumSquares64 and CountOutside with the
// AVX2 kernels against their Go loops bit for bit, on lengths around the
// 4- and 8-lane boundaries and a layer's residual stream (384×128), with
// zeros of both signs, infinities, subnormals, NaNs and values equal to
// the bounds.
func TestVitalsVectorMatchesGo(t *testing.T) {
	if !useVitalsAVX2 {
		t.Skip("no AVX2")
	}
	r := rand.New(rand.NewPCG(5, 8))
	for _, n := range []int{0, 1, 3, 4, 5, 7, 8, 9, 15, 16, 17, 33, 100, 384 * 128} {
		for _, special := range []bool{false, true} {
			x := elemInputs(r, n)
			if !special {
				for i := range x {
					x[i] = float32(r.NormFloat64())
				}
			}
			lo, hi := float32(-1.5), float32(2)
			for i := range x {
				switch r.IntN(50) {
				case 0:
					x[i] = float32(math.NaN())
				case 1:
					x[i] = lo
				case 2:
					x[i] = hi
				}
			}
			if !special {
				for i := range x {
					if x[i] != x[i] {
						x[i] = 0
					}
				}
			}
			run := func(vec bool) (float64, float64, int) {
				old := useVitalsAVX2
				useVitalsAVX2 = vec
				defer func() { useVitalsAVX2 = old }()
				s, ss := SumSquares64(x)
				return s, ss, CountOutside(x, lo, hi)
			}
			s1, ss1, k1 := run(true)
			s0, ss0, k0 := run(false)
			same := func(a, b float64) bool {
				return math.Float64bits(a) == math.Float64bits(b) || (a != a && b != b)
			}
			if !same(s1, s0) || !same(ss1, ss0) || k1 != k0 {
				t.Fatalf("n=%d special=%v: vector (%v, %v, %d), Go (%v, %v, %d)", n, special, s1, ss1, k1, s0, ss0, k0)
			}
		}
	}
}
