package ops

// SumSquares64 returns Σ x and Σ x² over x in float64, each as four
// interleaved accumulators (element i into accumulator i mod 4 of the
// whole groups of four, in order; the last len(x) mod 4 elements into the
// first), combined as (a0+a1)+(a2+a3): the residual-stream vitals' sums.
// Every product and sum is rounded to float64 (no fused multiply-add), so
// the vector kernel, where the CPU has one, gives the same bits.
func SumSquares64(x []float32) (s, ss float64) {
	var a, b [4]float64
	n := sum4x64(x, &a, &b)
	a0, a1, a2, a3 := a[0], a[1], a[2], a[3]
	b0, b1, b2, b3 := b[0], b[1], b[2], b[3]
	i := n
	for ; i+4 <= len(x); i += 4 {
		v0, v1, v2, v3 := float64(x[i]), float64(x[i+1]), float64(x[i+2]), float64(x[i+3])
		a0, a1, a2, a3 = a0+v0, a1+v1, a2+v2, a3+v3
		b0, b1, b2, b3 = b0+v0*v0, b1+v1*v1, b2+v2*v2, b3+v3*v3
	}
	for ; i < len(x); i++ {
		v := float64(x[i])
		a0 += v
		b0 += v * v
	}
	return (a0 + a1) + (a2 + a3), (b0 + b1) + (b2 + b3)
}

// CountOutside returns how many elements of x are below lo or above hi
// (a NaN is neither).
func CountOutside(x []float32, lo, hi float32) int {
	k, n := countOutsideVec(x, lo, hi)
	for _, v := range x[n:] {
		if v < lo || v > hi {
			k++
		}
	}
	return k
}
