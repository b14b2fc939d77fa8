package ops

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestLog8MatchesMathLog: log8 (the AVX-512 lanes of math.Log's amd64
// assembly) equals math.Log bit for bit on every float32 in [1, 2] (the
// attention softmax takes the log of its row sums, float32 in [1, T]),
// around √2/2 and powers of two, on random magnitudes, and on the
// special values it hands to math.Log.
func TestLog8MatchesMathLog(t *testing.T) {
	if !useLogAVX512 {
		t.Skip("no AVX-512")
	}
	var x, got [8]float64
	n := 0
	check := func(v float64) {
		x[n] = v
		n++
		if n < 8 {
			return
		}
		n = 0
		log8(&x, &got)
		for i, v := range x {
			if w := math.Log(v); math.Float64bits(got[i]) != math.Float64bits(w) && !(w != w && got[i] != got[i]) {
				t.Fatalf("log8(%v) = %v (%#x), math.Log %v (%#x)", v, got[i], math.Float64bits(got[i]), w, math.Float64bits(w))
			}
		}
	}
	step := uint32(1)
	if testing.Short() {
		step = 61
	}
	for b := math.Float32bits(1); b <= math.Float32bits(2); b += step {
		check(float64(math.Float32frombits(b)))
	}
	r := rand.New(rand.NewPCG(3, 9))
	for i := 0; i < 200000; i++ {
		check(math.Exp(r.NormFloat64() * 20))
		check(float64(float32(1 + r.Float64()*4096)))
	}
	for _, c := range []float64{math.Sqrt2 / 2, 0.5, 1, 2, 64, 65, math.MaxFloat64, math.SmallestNonzeroFloat64, 1e-310} {
		for d := -4; d <= 4; d++ {
			check(math.Float64frombits(uint64(int64(math.Float64bits(c)) + int64(d))))
		}
	}
	for _, s := range []float64{0, math.Copysign(0, -1), -1, math.Inf(1), math.Inf(-1), math.NaN(), 3, 4} {
		check(s)
	}
}
