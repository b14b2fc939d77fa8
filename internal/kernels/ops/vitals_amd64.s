#include "textflag.h"

// func sum4x64AVX2(x []float32, a, b *[4]float64)
// Four float64 lanes: lane l sums x[4i+l] (VADDPD) and x[4i+l]² (VMULPD,
// then VADDPD), in order over i, as SumSquares64's scalar accumulators.
TEXT ·sum4x64AVX2(SB), NOSPLIT, $0-40
	MOVQ x_base+0(FP), SI
	MOVQ x_len+8(FP), CX
	MOVQ a+24(FP), DI
	MOVQ b+32(FP), DX
	SHRQ $2, CX
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1

sumloop:
	VCVTPS2PD (SI), Y2
	VADDPD    Y2, Y0, Y0
	VMULPD    Y2, Y2, Y3
	VADDPD    Y3, Y1, Y1
	ADDQ      $16, SI
	DECQ      CX
	JNZ       sumloop
	VMOVUPD   Y0, (DI)
	VMOVUPD   Y1, (DX)
	VZEROUPPER
	RET

// func countOutsideAVX2(x []float32, lo, hi float32) int
// The number of x < lo or x > hi (ordered comparisons: a NaN is neither),
// 8 lanes at a time.
TEXT ·countOutsideAVX2(SB), NOSPLIT, $0-40
	MOVQ x_base+0(FP), SI
	MOVQ x_len+8(FP), CX
	VBROADCASTSS lo+24(FP), Y6
	VBROADCASTSS hi+28(FP), Y7
	XORQ AX, AX
	SHRQ $3, CX

countloop:
	VMOVUPS   (SI), Y0
	VCMPPS    $0x11, Y6, Y0, Y1
	VCMPPS    $0x1E, Y7, Y0, Y2
	VORPS     Y2, Y1, Y1
	VMOVMSKPS Y1, DX
	POPCNTL   DX, DX
	ADDQ      DX, AX
	ADDQ      $32, SI
	DECQ      CX
	JNZ       countloop
	MOVQ      AX, ret+32(FP)
	VZEROUPPER
	RET
