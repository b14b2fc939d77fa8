package ops

import "golang.org/x/sys/cpu"

// sum4x64AVX2 sets a[l] = Σ x[4i+l] and b[l] = Σ x[4i+l]² (float64, in
// order over i, each product rounded) over x, whose length is a multiple
// of 4 and ≥ 4 (vitals_amd64.s).
//
//go:noescape
func sum4x64AVX2(x []float32, a, b *[4]float64)

// countOutsideAVX2 is CountOutside over x, whose length is a multiple of 8
// (vitals_amd64.s).
//
//go:noescape
func countOutsideAVX2(x []float32, lo, hi float32) int

// useVitalsAVX2 selects the kernels above (tests switch it off to compare).
var useVitalsAVX2 = cpu.X86.HasAVX2 && cpu.X86.HasPOPCNT

// sum4x64 runs SumSquares64's four accumulators over the whole groups of
// four of x with sum4x64AVX2 (a and b start at zero) and returns how many
// elements it summed (0 without AVX2).
func sum4x64(x []float32, a, b *[4]float64) int {
	n := len(x) &^ 3
	if !useVitalsAVX2 || n == 0 {
		return 0
	}
	sum4x64AVX2(x[:n], a, b)
	return n
}

// countOutsideVec counts the elements of x[:n] outside [lo, hi] with
// countOutsideAVX2, n = len(x) rounded down to a multiple of 8 (0 without
// AVX2).
func countOutsideVec(x []float32, lo, hi float32) (k, n int) {
	n = len(x) &^ 7
	if !useVitalsAVX2 || n == 0 {
		return 0, 0
	}
	return countOutsideAVX2(x[:n], lo, hi), n
}
