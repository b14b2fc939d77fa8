//go:build !amd64

package ops

// expShiftSum writes dst[i] = e^(src[i]−mx) and returns their sum; every
// src[i] must be ≤ mx. dst may alias src.
func expShiftSum(dst, src []float32, mx float32) float32 { return expShiftSumGo(dst, src, mx) }

// sigmoidRow writes dst[i] = 1/(1+e^(−src[i])).
func sigmoidRow(dst, src []float32) { sigmoidRowGo(dst, src) }

// expShiftSumWide is expShiftSum.
func expShiftSumWide(dst, src []float32, mx float32) float32 { return expShiftSum(dst, src, mx) }
