package ops

import "golang.org/x/sys/cpu"

// expShiftSumAVX2 is the 8-wide AVX2/FMA twin of expShiftSumGo over the
// first len(src)&^7 elements (expsum_amd64.s); it returns their sum.
//
//go:noescape
func expShiftSumAVX2(dst, src []float32, mx float32) float32

var useExpAVX2 = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// expShiftSumAVX512 is expShiftSumAVX2 16 lanes at a time, bit-identical
// (the same operations per element, the terms summed in the same order).
//
//go:noescape
func expShiftSumAVX512(dst, src []float32, mx float32) float32

var useExpAVX512 = useExpAVX2 && cpu.X86.HasAVX512F

// expShiftSumWide is expShiftSum with the AVX-512 body where the CPU has
// it; the results are the same bits.
func expShiftSumWide(dst, src []float32, mx float32) float32 {
	if !useExpAVX512 || len(src) < 8 {
		return expShiftSum(dst, src, mx)
	}
	dst = dst[:len(src)]
	n := len(src) &^ 7
	s := expShiftSumAVX512(dst[:n], src[:n], mx)
	return s + expShiftSumGo(dst[n:], src[n:], mx)
}

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
