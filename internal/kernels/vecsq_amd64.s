#include "textflag.h"

// func sqAddAVX2(dst, x *float32, n int) (dd, xx float32)
//
// dd = Σ dst[i]², xx = Σ x[i]² over n (a multiple of 8) elements, each
// accumulated exactly as dotAVX2 accumulates a·a (four accumulators over
// 32 floats, eight at a time into the first, the same reduction), and
// dst[i] += x[i], in one pass: the norms are read before the sum is
// written.
TEXT ·sqAddAVX2(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), AX
	MOVQ x+8(FP), BX
	MOVQ n+16(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11
	CMPQ CX, $32
	JL sqAdd_tail8
sqAdd_loop32:
	VMOVUPS 0(AX), Y4
	VMOVUPS 0(BX), Y12
	VFMADD231PS Y4, Y4, Y0
	VFMADD231PS Y12, Y12, Y8
	VADDPS Y12, Y4, Y4
	VMOVUPS Y4, 0(AX)
	VMOVUPS 32(AX), Y5
	VMOVUPS 32(BX), Y13
	VFMADD231PS Y5, Y5, Y1
	VFMADD231PS Y13, Y13, Y9
	VADDPS Y13, Y5, Y5
	VMOVUPS Y5, 32(AX)
	VMOVUPS 64(AX), Y6
	VMOVUPS 64(BX), Y14
	VFMADD231PS Y6, Y6, Y2
	VFMADD231PS Y14, Y14, Y10
	VADDPS Y14, Y6, Y6
	VMOVUPS Y6, 64(AX)
	VMOVUPS 96(AX), Y7
	VMOVUPS 96(BX), Y15
	VFMADD231PS Y7, Y7, Y3
	VFMADD231PS Y15, Y15, Y11
	VADDPS Y15, Y7, Y7
	VMOVUPS Y7, 96(AX)
	ADDQ $128, AX
	ADDQ $128, BX
	SUBQ $32, CX
	CMPQ CX, $32
	JGE sqAdd_loop32
sqAdd_tail8:
	CMPQ CX, $8
	JL sqAdd_done
	VMOVUPS 0(AX), Y4
	VMOVUPS 0(BX), Y12
	VFMADD231PS Y4, Y4, Y0
	VFMADD231PS Y12, Y12, Y8
	VADDPS Y12, Y4, Y4
	VMOVUPS Y4, 0(AX)
	ADDQ $32, AX
	ADDQ $32, BX
	SUBQ $8, CX
	JMP sqAdd_tail8
sqAdd_done:
	VADDPS Y1, Y0, Y0
	VADDPS Y3, Y2, Y2
	VADDPS Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VHADDPS X0, X0, X0
	VHADDPS X0, X0, X0
	MOVSS X0, dd+24(FP)
	VADDPS Y9, Y8, Y8
	VADDPS Y11, Y10, Y10
	VADDPS Y10, Y8, Y8
	VEXTRACTF128 $1, Y8, X9
	VADDPS X9, X8, X8
	VHADDPS X8, X8, X8
	VHADDPS X8, X8, X8
	MOVSS X8, xx+28(FP)
	VZEROUPPER
	RET
