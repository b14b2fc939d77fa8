package ops

import "golang.org/x/sys/cpu"

// expShiftSumAVX2 is the 8-wide AVX2/FMA twin of expShiftSumGo over the
// first len(src)&^7 elements (expsum_amd64.s); it returns their sum.
//
//go:noescape
func expShiftSumAVX2(dst, src []float32, mx float32) float32

var useExpAVX2 = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// expShiftSumAVX512All is expShiftSum over the whole of src on AVX-512
// (expsum_amd64.s): expShiftSumAVX2's blocks 16 lanes at a time (the
// same lanes, the same sum order), then the last len(src) mod 8 terms in
// one masked block with expShiftSumGo's unfused arithmetic, summed in
// order and added last as expShiftSumGo's sum of them is: bit-identical
// to expShiftSum's AVX2 + Go tail, without a scalar exponential.
//
//go:noescape
func expShiftSumAVX512All(dst, src []float32, mx float32) float32

// useExpAVX512 selects the 16-lane kernels (tests switch it off to compare).
var useExpAVX512 = useExpAVX2 && cpu.X86.HasAVX512F && cpu.X86.HasAVX512DQ && cpu.X86.HasAVX512VL

// expShiftSum writes dst[i] = e^(src[i]−mx) and returns their sum; every
// src[i] must be ≤ mx. dst may alias src. Uses the AVX-512 or AVX2 kernel
// when the CPU has one (the same bits; the tail and other CPUs use
// expShiftSumGo).
func expShiftSum(dst, src []float32, mx float32) float32 {
	if useExpAVX512 && len(src) > 0 {
		return expShiftSumAVX512All(dst[:len(src)], src, mx)
	}
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

// sigmoidAVX512 is sigmoidAVX2 16 lanes at a time, bit-identical to it
// (expsum_amd64.s).
//
//go:noescape
func sigmoidAVX512(dst, src []float32)

// sigmoidRow writes dst[i] = 1/(1+e^(−src[i])), with the AVX-512 or AVX2
// kernel when the CPU has one (the same bits).
func sigmoidRow(dst, src []float32) {
	if !useExpAVX2 || len(src) < 8 {
		sigmoidRowGo(dst, src)
		return
	}
	dst = dst[:len(src)]
	n := len(src) &^ 7
	if useExpAVX512 {
		sigmoidAVX512(dst[:n], src[:n])
	} else {
		sigmoidAVX2(dst[:n], src[:n])
	}
	sigmoidRowGo(dst[n:], src[n:])
}
