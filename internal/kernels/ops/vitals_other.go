//go:build !amd64

package ops

// sum4x64 leaves the four accumulators of SumSquares64 at zero: the Go
// loop sums every element (no vector kernel here).
func sum4x64(x []float32, a, b *[4]float64) int { return 0 }

// countOutsideVec counts nothing: CountOutside's loop does every element.
func countOutsideVec(x []float32, lo, hi float32) (k, n int) { return 0, 0 }
