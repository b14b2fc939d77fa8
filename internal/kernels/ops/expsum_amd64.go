package ops

import "golang.org/x/sys/cpu"

// expShiftSumAVX2 is the 8-wide AVX2/FMA twin of expShiftSumGo over the
// first len(src)&^7 elements (expsum_amd64.s); it returns their sum.
//
//go:noescape
func expShiftSumAVX2(dst, src []float32, mx float32) float32

var useExpAVX2 = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// expShiftSum writes dst[i] = e^(src[i]−mx) and returns their sum; every
// src[i] must be ≤ mx. dst may alias src. Uses the AVX2 kernel when the CPU
// has it (the tail and other CPUs use expShiftSumGo).
func expShiftSum(dst, src []float32, mx float32) float32 {
	if !useExpAVX2 || len(src) < 8 {
		return expShiftSumGo(dst, src, mx)
	}
	dst = dst[:len(src)]
	n := len(src) &^ 7
	s := expShiftSumAVX2(dst[:n], src[:n], mx)
	return s + expShiftSumGo(dst[n:], src[n:], mx)
}

// sigmoidAVX2 is the 8-wide twin of sigmoidRowGo over the first
// len(src)&^7 elements (expsum_amd64.s).
//
//go:noescape
func sigmoidAVX2(dst, src []float32)

// sigmoidRow writes dst[i] = 1/(1+e^(−src[i])), with the AVX2 kernel when
// the CPU has it.
func sigmoidRow(dst, src []float32) {
	if !useExpAVX2 || len(src) < 8 {
		sigmoidRowGo(dst, src)
		return
	}
	dst = dst[:len(src)]
	n := len(src) &^ 7
	sigmoidAVX2(dst[:n], src[:n])
	sigmoidRowGo(dst[n:], src[n:])
}
