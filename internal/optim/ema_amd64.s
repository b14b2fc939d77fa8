#include "textflag.h"

// func emaAVX512(w, p *float32, n int, b, c float64)
// w[i] = float32(b·float64(w[i]) + c·float64(p[i])) for i < n, n a positive
// multiple of 8: the products and the sum in float64, each rounded (no
// FMA), then rounded to float32 to nearest even, as emaGo does.
TEXT ·emaAVX512(SB), NOSPLIT, $0-40
	MOVQ         w+0(FP), DI
	MOVQ         p+8(FP), SI
	MOVQ         n+16(FP), CX
	VBROADCASTSD b+24(FP), Z1
	VBROADCASTSD c+32(FP), Z2

loop:
	VCVTPS2PD (DI), Z3
	VCVTPS2PD (SI), Z4
	VMULPD    Z1, Z3, Z3
	VMULPD    Z2, Z4, Z4
	VADDPD    Z4, Z3, Z3
	VCVTPD2PS Z3, Y3
	VMOVUPS   Y3, (DI)
	ADDQ      $32, DI
	ADDQ      $32, SI
	SUBQ      $8, CX
	JNZ       loop
	VZEROUPPER
	RET
