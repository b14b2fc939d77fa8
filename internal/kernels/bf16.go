package kernels

import (
	"math"
	"sync"

	"golang.org/x/sys/cpu"
)

// bfloat16 ("brain float"): the upper 16 bits of an IEEE float32 — its sign,
// its 8 exponent bits and 7 of its 23 fraction bits. A float32 rounded to
// bf16 keeps float32's range and about 3 significant decimal digits. The
// product of two bf16 values (8-bit significands) is exact in float32
// (24-bit significand), so a bf16 GEMM with float32 accumulation differs
// from an fp32 GEMM only by the rounding of its inputs and by the order of
// its float32 sums.

// BF16Bits rounds x to the nearest bfloat16, ties to even, and returns its
// 16 bits. A NaN stays a NaN (quiet, sign kept); ±Inf stay ±Inf; a finite
// value that rounds above the largest bf16 becomes ±Inf, as IEEE rounding
// does.
func BF16Bits(x float32) uint16 {
	u := math.Float32bits(x)
	if u&0x7fffffff > 0x7f800000 { // NaN: keep it a NaN after truncation
		return uint16(u>>16) | 0x40
	}
	u += 0x7fff + (u>>16)&1
	return uint16(u >> 16)
}

// BF16ToFloat32 widens bfloat16 bits h to the float32 they stand for
// (exact).
func BF16ToFloat32(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// RoundBF16 rounds x to the nearest bfloat16 (ties to even) and returns it
// as a float32 whose low 16 bits are zero.
func RoundBF16(x float32) float32 { return BF16ToFloat32(BF16Bits(x)) }

// RoundBF16Slice sets dst[i] = RoundBF16(src[i]) for i < len(src); dst may
// be src.
func RoundBF16Slice(dst, src []float32) {
	dst = dst[:len(src)]
	for i, x := range src {
		dst[i] = RoundBF16(x)
	}
}

// SgemmBF16 is Sgemm with the elements of A and B rounded to bfloat16
// (round to nearest, ties to even) before they are multiplied, and the
// products summed in float32: C = alpha·op(bf16(A))·op(bf16(B)) + beta·C.
// alpha, beta and C stay float32. Neither A nor B is modified. The result
// may differ from Sgemm on pre-rounded operands by the order of the float32
// sums (a hardware bf16 dot product adds pairs of products before the
// accumulator), never by more than float32 summation error. Sizes are
// checked as Sgemm checks them.
func SgemmBF16(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	sgemmBF16(false, transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// sgemmBF16 is SgemmBF16, on the calling goroutine alone when serial: on
// the bf16 micro-kernel selected at start-up (BF16Impl), else the
// reference, which rounds copies of the operands and runs the float32
// GEMM on them.
func sgemmBF16(serial, transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	if kn := kernBF16; kn != nil {
		sgemmK(kn, serial, transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		return
	}
	if m <= 0 || n <= 0 || k <= 0 || alpha == 0 {
		sgemm(serial, transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		return
	}
	checkOperand("A", transA, m, k, a, lda)
	checkOperand("B", transB, k, n, b, ldb)
	s := bf16Scratch.Get().(*[2][]float32)
	ra := roundOperand(&s[0], transA, m, k, a, lda)
	rb := roundOperand(&s[1], transB, k, n, b, ldb)
	sgemm(serial, transA, transB, m, n, k, alpha, ra, lda, rb, ldb, beta, c, ldc)
	bf16Scratch.Put(s)
}

var bf16Scratch = sync.Pool{New: func() any { return new([2][]float32) }}

// roundOperand copies the stored rows of op(X) (rows×cols, row stride ld)
// into *buf rounded to bf16, keeping the layout, and returns the copy.
func roundOperand(buf *[]float32, trans bool, rows, cols int, x []float32, ld int) []float32 {
	if trans {
		rows, cols = cols, rows
	}
	n := (rows-1)*ld + cols
	*buf = grow(*buf, n)
	dst := (*buf)[:n]
	for r := range rows {
		RoundBF16Slice(dst[r*ld:r*ld+cols], x[r*ld:r*ld+cols])
	}
	return dst
}

// BF16Hardware reports whether this CPU multiplies bf16 in hardware
// (AVX512_BF16's VDPBF16PS), and if not, the missing feature by the name
// /proc/cpuinfo gives it. Without it SgemmBF16 still computes the right
// result, on the float32 kernels, at their speed: fine for tests, not for
// training (train.precision = "bf16" refuses to start).
func BF16Hardware() (ok bool, missing string) {
	switch {
	case !hasAVX512():
		return false, "avx512f"
	case !cpu.X86.HasAVX512BF16:
		return false, "avx512_bf16"
	}
	return true, ""
}
