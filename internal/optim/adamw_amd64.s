#include "textflag.h"

// AVX-512 twins of the AdamW loops of adamw.go (declared in adamw_amd64.go).
// Every kernel does, lane by lane, the same IEEE operations in the same
// order as the Go expression it replaces — float32 → float64 conversions,
// float64 multiplies and adds, float32 roundings, the float32 square root
// and division — and no fused multiply-add, so each result is bit for bit
// the Go one. The float64 sums stay sequential in element order: the
// squared terms of 8 elements are computed in one vector and added to the
// running sum lane by lane, in order — to a scalar (LANES8), or, where
// several independent sums run side by side, to the lanes of one vector
// after a transpose (TSUM4, sumSq8AVX512), which does the same adds.
// n is a positive multiple of 8; the Go wrappers check the slice bounds.
// Every kernel ends with VZEROUPPER (docs: the dirty-upper-state trap).

// adamConsts (adamw.go): gs 0, b1 8, c1 16, b2 24, c2 32, wd 40, step 48
// (float64), ib1 56, ib2 60, eps 64 (float32), cg 72, cm 80 (float64).

// Broadcast the constants: Z16 gs, Z17 b1, Z18 c1 = 1−b1, Z19 b2,
// Z20 c2 = 1−b2, Z21 wd; Y22 ib1, Y23 ib2, Y24 eps.
#define LOADK(k) \
	VBROADCASTSD 0(k), Z16; \
	VBROADCASTSD 8(k), Z17; \
	VBROADCASTSD 16(k), Z18; \
	VBROADCASTSD 24(k), Z19; \
	VBROADCASTSD 32(k), Z20; \
	VBROADCASTSD 40(k), Z21; \
	VBROADCASTSS 56(k), Y22; \
	VBROADCASTSS 60(k), Y23; \
	VBROADCASTSS 64(k), Y24

// DIR8 is the update direction of the 8 elements at SI (g), DI (m),
// R8 (v), R9 (θ) (adamU in adamw.go):
//   g = float64(g)·gs
//   m = float32(b1·float64(m) + c1·g)          → Y7
//   v = float32(b2·float64(v) + (c2·g)·g)      → Y9
//   u = float64((m·ib1) / (√v·ib2 + eps)) + wd·float64(θ)   (the quotient
//       in float32) → Z11; float64(θ) → Z12.
#define DIR8 \
	VCVTPS2PD (SI), Z6; \
	VMULPD Z16, Z6, Z6; \
	VCVTPS2PD (DI), Z7; \
	VMULPD Z17, Z7, Z7; \
	VMULPD Z18, Z6, Z8; \
	VADDPD Z8, Z7, Z7; \
	VCVTPD2PS Z7, Y7; \
	VCVTPS2PD (R8), Z9; \
	VMULPD Z19, Z9, Z9; \
	VMULPD Z20, Z6, Z10; \
	VMULPD Z6, Z10, Z10; \
	VADDPD Z10, Z9, Z9; \
	VCVTPD2PS Z9, Y9; \
	VSQRTPS Y9, Y10; \
	VMULPS Y23, Y10, Y10; \
	VADDPS Y24, Y10, Y10; \
	VMULPS Y22, Y7, Y11; \
	VDIVPS Y10, Y11, Y11; \
	VCVTPS2PD Y11, Z11; \
	VCVTPS2PD (R9), Z12; \
	VMULPD Z21, Z12, Z13; \
	VADDPD Z13, Z11, Z11

// DIR8N(cm, cg) is DIR8 for NAdamW (nadamU in nadamw.go): the numerator
// float32(cm·float64(m) + cg·g) in place of m·ib1 (cm, cg: the broadcast
// constants at 80 and 72 of adamConsts).
#define DIR8N(cm, cg) \
	VCVTPS2PD (SI), Z6; \
	VMULPD Z16, Z6, Z6; \
	VCVTPS2PD (DI), Z7; \
	VMULPD Z17, Z7, Z7; \
	VMULPD Z18, Z6, Z8; \
	VADDPD Z8, Z7, Z7; \
	VCVTPD2PS Z7, Y7; \
	VCVTPS2PD (R8), Z9; \
	VMULPD Z19, Z9, Z9; \
	VMULPD Z20, Z6, Z10; \
	VMULPD Z6, Z10, Z10; \
	VADDPD Z10, Z9, Z9; \
	VCVTPD2PS Z9, Y9; \
	VSQRTPS Y9, Y10; \
	VMULPS Y23, Y10, Y10; \
	VADDPS Y24, Y10, Y10; \
	VCVTPS2PD Y7, Z11; \
	VMULPD cm, Z11, Z11; \
	VMULPD cg, Z6, Z13; \
	VADDPD Z13, Z11, Z11; \
	VCVTPD2PS Z11, Y11; \
	VDIVPS Y10, Y11, Y11; \
	VCVTPS2PD Y11, Z11; \
	VCVTPS2PD (R9), Z12; \
	VMULPD Z21, Z12, Z13; \
	VADDPD Z13, Z11, Z11

// NEXT8 advances the four pointers by 8 float32 and the count by −8.
#define NEXT8 \
	ADDQ $32, SI; \
	ADDQ $32, DI; \
	ADDQ $32, R8; \
	ADDQ $32, R9; \
	SUBQ $8, CX

// LANES8(z, y, x, acc) adds lanes 0…7 of the float64 vector z (y, x: its
// lower halves) to the scalar acc, in lane order (X26–X28 scratch).
#define LANES8(z, y, x, acc) \
	VADDSD x, acc, acc; \
	VUNPCKHPD x, x, X26; \
	VADDSD X26, acc, acc; \
	VEXTRACTF32X4 $1, y, X27; \
	VADDSD X27, acc, acc; \
	VUNPCKHPD X27, X27, X26; \
	VADDSD X26, acc, acc; \
	VEXTRACTF64X4 $1, z, Y28; \
	VADDSD X28, acc, acc; \
	VUNPCKHPD X28, X28, X26; \
	VADDSD X26, acc, acc; \
	VEXTRACTF32X4 $1, Y28, X27; \
	VADDSD X27, acc, acc; \
	VUNPCKHPD X27, X27, X26; \
	VADDSD X26, acc, acc

// LANES8X2 is LANES8 into two accumulators (a later segment's own sums
// beside the chunk's).
#define LANES8X2(z, y, x, acc, acc2) \
	VADDSD x, acc, acc; \
	VADDSD x, acc2, acc2; \
	VUNPCKHPD x, x, X26; \
	VADDSD X26, acc, acc; \
	VADDSD X26, acc2, acc2; \
	VEXTRACTF32X4 $1, y, X27; \
	VADDSD X27, acc, acc; \
	VADDSD X27, acc2, acc2; \
	VUNPCKHPD X27, X27, X26; \
	VADDSD X26, acc, acc; \
	VADDSD X26, acc2, acc2; \
	VEXTRACTF64X4 $1, z, Y28; \
	VADDSD X28, acc, acc; \
	VADDSD X28, acc2, acc2; \
	VUNPCKHPD X28, X28, X26; \
	VADDSD X26, acc, acc; \
	VADDSD X26, acc2, acc2; \
	VEXTRACTF32X4 $1, Y28, X27; \
	VADDSD X27, acc, acc; \
	VADDSD X27, acc2, acc2; \
	VUNPCKHPD X27, X27, X26; \
	VADDSD X26, acc, acc; \
	VADDSD X26, acc2, acc2

// SQ4: Z11 = u², Z12 = θ², Z7 = float64(m)², Z9 = float64(v)².
#define SQ4 \
	VMULPD Z11, Z11, Z11; \
	VMULPD Z12, Z12, Z12; \
	VCVTPS2PD Y7, Z7; \
	VMULPD Z7, Z7, Z7; \
	VCVTPS2PD Y9, Z9; \
	VMULPD Z9, Z9, Z9

// TSUM4 adds u², θ², m², v² of the 8 elements (Z11, Z12, Z7, Z9) to the
// four running sums held as the lanes of Y0 = (un, pn, sm, sv): the four
// vectors are transposed into T_j = (u_j², θ_j², m_j², v_j²), and
// Y0 += T_0, += T_1, … += T_7 — lane by lane the same adds, in the same
// order, as four scalar chains, with a quarter of the instructions.
#define TSUM4 \
	VUNPCKLPD Z12, Z11, Z14; \
	VUNPCKHPD Z12, Z11, Z15; \
	VUNPCKLPD Z9, Z7, Z29; \
	VUNPCKHPD Z9, Z7, Z30; \
	VSHUFF64X2 $0, Y29, Y14, Y6; \
	VSHUFF64X2 $0, Y30, Y15, Y8; \
	VADDPD Y6, Y0, Y0; \
	VADDPD Y8, Y0, Y0; \
	VSHUFF64X2 $3, Y29, Y14, Y6; \
	VSHUFF64X2 $3, Y30, Y15, Y8; \
	VADDPD Y6, Y0, Y0; \
	VADDPD Y8, Y0, Y0; \
	VEXTRACTF64X4 $1, Z14, Y14; \
	VEXTRACTF64X4 $1, Z29, Y29; \
	VEXTRACTF64X4 $1, Z15, Y15; \
	VEXTRACTF64X4 $1, Z30, Y30; \
	VSHUFF64X2 $0, Y29, Y14, Y6; \
	VSHUFF64X2 $0, Y30, Y15, Y8; \
	VADDPD Y6, Y0, Y0; \
	VADDPD Y8, Y0, Y0; \
	VSHUFF64X2 $3, Y29, Y14, Y6; \
	VSHUFF64X2 $3, Y30, Y15, Y8; \
	VADDPD Y6, Y0, Y0; \
	VADDPD Y8, Y0, Y0

// TSUM4X2(ya, yb) is TSUM4 into ya = (un, pn, sm, sv) and, the same
// terms, into yb = (su, sp, ·, ·): a later segment's own sums beside the
// chunk's, in vector lanes as TSUM4 (it replaced LANES8X2 and LANES8,
// which did the same adds one lane at a time at three times the cost).
#define TSUM4X2(ya, yb) \
	VUNPCKLPD Z12, Z11, Z14; \
	VUNPCKHPD Z12, Z11, Z15; \
	VUNPCKLPD Z9, Z7, Z29; \
	VUNPCKHPD Z9, Z7, Z30; \
	VSHUFF64X2 $0, Y29, Y14, Y6; \
	VSHUFF64X2 $0, Y30, Y15, Y8; \
	VADDPD Y6, ya, ya; \
	VADDPD Y6, yb, yb; \
	VADDPD Y8, ya, ya; \
	VADDPD Y8, yb, yb; \
	VSHUFF64X2 $3, Y29, Y14, Y6; \
	VSHUFF64X2 $3, Y30, Y15, Y8; \
	VADDPD Y6, ya, ya; \
	VADDPD Y6, yb, yb; \
	VADDPD Y8, ya, ya; \
	VADDPD Y8, yb, yb; \
	VEXTRACTF64X4 $1, Z14, Y14; \
	VEXTRACTF64X4 $1, Z29, Y29; \
	VEXTRACTF64X4 $1, Z15, Y15; \
	VEXTRACTF64X4 $1, Z30, Y30; \
	VSHUFF64X2 $0, Y29, Y14, Y6; \
	VSHUFF64X2 $0, Y30, Y15, Y8; \
	VADDPD Y6, ya, ya; \
	VADDPD Y6, yb, yb; \
	VADDPD Y8, ya, ya; \
	VADDPD Y8, yb, yb; \
	VSHUFF64X2 $3, Y29, Y14, Y6; \
	VSHUFF64X2 $3, Y30, Y15, Y8; \
	VADDPD Y6, ya, ya; \
	VADDPD Y6, yb, yb; \
	VADDPD Y8, ya, ya; \
	VADDPD Y8, yb, yb

// STORE3 writes m' (Y7), v' (Y9) and float32(u) (Z11) at R10, R11, R12
// (before SQ4 squares them in place) and advances the three by 8 float32.
#define STORE3 \
	VMOVUPS Y7, (R10); \
	VMOVUPS Y9, (R11); \
	VCVTPD2PS Z11, Y13; \
	VMOVUPS Y13, (R12); \
	ADDQ $32, R10; \
	ADDQ $32, R11; \
	ADDQ $32, R12

// func adamDirAVX512(mode int, gr, m, v, p *float32, n int, k *adamConsts, acc *[6]float64)
// acc: un, pn, su, sp, sm, sv. mode 0 adds to un, pn; mode 1 also to sm,
// sv; mode 2 to all six (su, sp take the same terms as un, pn).
TEXT ·adamDirAVX512(SB), NOSPLIT, $0-64
	MOVQ gr+8(FP), SI
	MOVQ m+16(FP), DI
	MOVQ v+24(FP), R8
	MOVQ p+32(FP), R9
	MOVQ n+40(FP), CX
	MOVQ k+48(FP), DX
	MOVQ acc+56(FP), BX
	LOADK(DX)
	VMOVSD 0(BX), X0
	VMOVSD 8(BX), X1
	VMOVSD 16(BX), X4
	VMOVSD 24(BX), X5
	VMOVSD 32(BX), X2
	VMOVSD 40(BX), X3
	MOVQ mode+0(FP), AX
	CMPQ AX, $1
	JEQ  tel
	CMPQ AX, $2
	JEQ  telseg

norms:
	DIR8
	VMULPD Z11, Z11, Z11
	VMULPD Z12, Z12, Z12
	LANES8(Z11, Y11, X11, X0)
	LANES8(Z12, Y12, X12, X1)
	NEXT8
	JNZ  norms
	JMP  done

tel:
	// Y0 = (un, pn, sm, sv)
	VMOVUPD 0(BX), X0
	VINSERTF128 $1, 32(BX), Y0, Y0

tel8:
	DIR8
	SQ4
	TSUM4
	NEXT8
	JNZ  tel8
	VMOVUPD X0, 0(BX)
	VEXTRACTF128 $1, Y0, 32(BX)
	VZEROUPPER
	RET

telseg:
	// Y0 = (un, pn, sm, sv), Y4 = (su, sp, 0, 0)
	VMOVUPD 0(BX), X0
	VINSERTF128 $1, 32(BX), Y0, Y0
	VMOVUPD 16(BX), X4

telseg8:
	DIR8
	SQ4
	TSUM4X2(Y0, Y4)
	NEXT8
	JNZ  telseg8
	VMOVUPD X0, 0(BX)
	VEXTRACTF128 $1, Y0, 32(BX)
	VMOVUPD X4, 16(BX)
	VZEROUPPER
	RET

done:
	VMOVSD X0, 0(BX)
	VMOVSD X1, 8(BX)
	VMOVSD X4, 16(BX)
	VMOVSD X5, 24(BX)
	VMOVSD X2, 32(BX)
	VMOVSD X3, 40(BX)
	VZEROUPPER
	RET

// func adamCommitAVX512(gr, m, v, p *float32, n int, k *adamConsts)
// Pass 2, elementwise, with DIR8's m', v' and u (pass 1's values):
//   m = m',  v = v',  θ = float32(float64(θ) − step·float64(float32(u)))
TEXT ·adamCommitAVX512(SB), NOSPLIT, $0-48
	MOVQ gr+0(FP), SI
	MOVQ m+8(FP), DI
	MOVQ v+16(FP), R8
	MOVQ p+24(FP), R9
	MOVQ n+32(FP), CX
	MOVQ k+40(FP), DX
	LOADK(DX)
	VBROADCASTSD 48(DX), Z25

commit:
	DIR8
	VMOVUPS Y7, (DI)
	VMOVUPS Y9, (R8)
	VCVTPD2PS Z11, Y13
	VCVTPS2PD Y13, Z13
	VMULPD Z25, Z13, Z13
	VSUBPD Z13, Z12, Z12
	VCVTPD2PS Z12, Y12
	VMOVUPS Y12, (R9)
	NEXT8
	JNZ  commit
	VZEROUPPER
	RET

// NAdamW twins of the two kernels above (DIR8N instead of DIR8).
// func nadamDirAVX512(mode int, gr, m, v, p *float32, n int, k *adamConsts, acc *[6]float64)
// acc: un, pn, su, sp, sm, sv. mode 0 adds to un, pn; mode 1 also to sm,
// sv; mode 2 to all six (su, sp take the same terms as un, pn).
TEXT ·nadamDirAVX512(SB), NOSPLIT, $0-64
	MOVQ gr+8(FP), SI
	MOVQ m+16(FP), DI
	MOVQ v+24(FP), R8
	MOVQ p+32(FP), R9
	MOVQ n+40(FP), CX
	MOVQ k+48(FP), DX
	MOVQ acc+56(FP), BX
	LOADK(DX)
	VBROADCASTSD 80(DX), Z25
	VBROADCASTSD 72(DX), Z31
	VMOVSD 0(BX), X0
	VMOVSD 8(BX), X1
	VMOVSD 16(BX), X4
	VMOVSD 24(BX), X5
	VMOVSD 32(BX), X2
	VMOVSD 40(BX), X3
	MOVQ mode+0(FP), AX
	CMPQ AX, $1
	JEQ  tel
	CMPQ AX, $2
	JEQ  telseg

norms:
	DIR8N(Z25, Z31)
	VMULPD Z11, Z11, Z11
	VMULPD Z12, Z12, Z12
	LANES8(Z11, Y11, X11, X0)
	LANES8(Z12, Y12, X12, X1)
	NEXT8
	JNZ  norms
	JMP  done

tel:
	// Y0 = (un, pn, sm, sv)
	VMOVUPD 0(BX), X0
	VINSERTF128 $1, 32(BX), Y0, Y0

tel8:
	DIR8N(Z25, Z31)
	SQ4
	TSUM4
	NEXT8
	JNZ  tel8
	VMOVUPD X0, 0(BX)
	VEXTRACTF128 $1, Y0, 32(BX)
	VZEROUPPER
	RET

telseg:
	// Y0 = (un, pn, sm, sv), Y4 = (su, sp, 0, 0)
	VMOVUPD 0(BX), X0
	VINSERTF128 $1, 32(BX), Y0, Y0
	VMOVUPD 16(BX), X4

telseg8:
	DIR8N(Z25, Z31)
	SQ4
	TSUM4X2(Y0, Y4)
	NEXT8
	JNZ  telseg8
	VMOVUPD X0, 0(BX)
	VEXTRACTF128 $1, Y0, 32(BX)
	VMOVUPD X4, 16(BX)
	VZEROUPPER
	RET

done:
	VMOVSD X0, 0(BX)
	VMOVSD X1, 8(BX)
	VMOVSD X4, 16(BX)
	VMOVSD X5, 24(BX)
	VMOVSD X2, 32(BX)
	VMOVSD X3, 40(BX)
	VZEROUPPER
	RET

// func nadamCommitAVX512(gr, m, v, p *float32, n int, k *adamConsts)
// Pass 2, elementwise, with DIR8's m', v' and u (pass 1's values):
//   m = m',  v = v',  θ = float32(float64(θ) − step·float64(float32(u)))
TEXT ·nadamCommitAVX512(SB), NOSPLIT, $0-48
	MOVQ gr+0(FP), SI
	MOVQ m+8(FP), DI
	MOVQ v+16(FP), R8
	MOVQ p+24(FP), R9
	MOVQ n+32(FP), CX
	MOVQ k+40(FP), DX
	LOADK(DX)
	VBROADCASTSD 48(DX), Z25
	VBROADCASTSD 80(DX), Z29
	VBROADCASTSD 72(DX), Z31

commit:
	DIR8N(Z29, Z31)
	VMOVUPS Y7, (DI)
	VMOVUPS Y9, (R8)
	VCVTPD2PS Z11, Y13
	VCVTPS2PD Y13, Z13
	VMULPD Z25, Z13, Z13
	VSUBPD Z13, Z12, Z12
	VCVTPD2PS Z12, Y12
	VMOVUPS Y12, (R9)
	NEXT8
	JNZ  commit
	VZEROUPPER
	RET

// func sumSqAVX512(x *float32, n int, acc float64) float64
// acc + Σ float64(x[j])², added in order.
TEXT ·sumSqAVX512(SB), NOSPLIT, $0-32
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	VMOVSD acc+16(FP), X0

sq1:
	VCVTPS2PD (SI), Z6
	VMULPD Z6, Z6, Z6
	LANES8(Z6, Y6, X6, X0)
	ADDQ $32, SI
	SUBQ $8, CX
	JNZ  sq1
	VMOVSD X0, ret+24(FP)
	VZEROUPPER
	RET

// func sumSq8AVX512(x *[8]*float32, n int, acc *[8]float64)
// acc[i] + Σ float64(x[i][j])² for eight arrays at once, the eight sums as
// the lanes of Z0: each block of 8 elements of the 8 arrays is squared and
// transposed (8×8, 24 shuffles) into c_j = (x0[j]², …, x7[j]²), and
// Z0 += c_0, += c_1, … += c_7 — lane by lane the same adds in the same
// order as eight scalar chains.
TEXT ·sumSq8AVX512(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), AX
	MOVQ 0(AX), SI
	MOVQ 8(AX), DI
	MOVQ 16(AX), R8
	MOVQ 24(AX), R9
	MOVQ 32(AX), R10
	MOVQ 40(AX), R11
	MOVQ 48(AX), R12
	MOVQ 56(AX), R13
	MOVQ n+8(FP), CX
	MOVQ acc+16(FP), BX
	VMOVUPD 0(BX), Z0

sq8:
	VCVTPS2PD (SI), Z8
	VMULPD Z8, Z8, Z8
	VCVTPS2PD (DI), Z9
	VMULPD Z9, Z9, Z9
	VCVTPS2PD (R8), Z10
	VMULPD Z10, Z10, Z10
	VCVTPS2PD (R9), Z11
	VMULPD Z11, Z11, Z11
	VCVTPS2PD (R10), Z12
	VMULPD Z12, Z12, Z12
	VCVTPS2PD (R11), Z13
	VMULPD Z13, Z13, Z13
	VCVTPS2PD (R12), Z14
	VMULPD Z14, Z14, Z14
	VCVTPS2PD (R13), Z15
	VMULPD Z15, Z15, Z15
	// t: pairs of rows interleaved within 128-bit lanes
	VUNPCKLPD Z9, Z8, Z16   // x0[0] x1[0] | x0[2] x1[2] | x0[4] x1[4] | x0[6] x1[6]
	VUNPCKHPD Z9, Z8, Z17   // x0[1] x1[1] | … odd
	VUNPCKLPD Z11, Z10, Z18 // x2, x3 even
	VUNPCKHPD Z11, Z10, Z19
	VUNPCKLPD Z13, Z12, Z20 // x4, x5
	VUNPCKHPD Z13, Z12, Z21
	VUNPCKLPD Z15, Z14, Z22 // x6, x7
	VUNPCKHPD Z15, Z14, Z23
	// s: 128-bit lanes 0, 2 (0x88) or 1, 3 (0xDD) of two t's
	VSHUFF64X2 $0x88, Z18, Z16, Z24 // x01[0] x01[4] x23[0] x23[4]
	VSHUFF64X2 $0xDD, Z18, Z16, Z25 // x01[2] x01[6] x23[2] x23[6]
	VSHUFF64X2 $0x88, Z19, Z17, Z26 // x01[1] x01[5] x23[1] x23[5]
	VSHUFF64X2 $0xDD, Z19, Z17, Z27 // x01[3] x01[7] x23[3] x23[7]
	VSHUFF64X2 $0x88, Z22, Z20, Z28 // x45[0] x45[4] x67[0] x67[4]
	VSHUFF64X2 $0xDD, Z22, Z20, Z29 // x45[2] x45[6] x67[2] x67[6]
	VSHUFF64X2 $0x88, Z23, Z21, Z30 // x45[1] x45[5] x67[1] x67[5]
	VSHUFF64X2 $0xDD, Z23, Z21, Z31 // x45[3] x45[7] x67[3] x67[7]
	// c_j = x0…7[j], added in j order
	VSHUFF64X2 $0x88, Z28, Z24, Z8 // c0
	VADDPD Z8, Z0, Z0
	VSHUFF64X2 $0x88, Z30, Z26, Z9 // c1
	VADDPD Z9, Z0, Z0
	VSHUFF64X2 $0x88, Z29, Z25, Z10 // c2
	VADDPD Z10, Z0, Z0
	VSHUFF64X2 $0x88, Z31, Z27, Z11 // c3
	VADDPD Z11, Z0, Z0
	VSHUFF64X2 $0xDD, Z28, Z24, Z12 // c4
	VADDPD Z12, Z0, Z0
	VSHUFF64X2 $0xDD, Z30, Z26, Z13 // c5
	VADDPD Z13, Z0, Z0
	VSHUFF64X2 $0xDD, Z29, Z25, Z14 // c6
	VADDPD Z14, Z0, Z0
	VSHUFF64X2 $0xDD, Z31, Z27, Z15 // c7
	VADDPD Z15, Z0, Z0
	ADDQ $32, SI
	ADDQ $32, DI
	ADDQ $32, R8
	ADDQ $32, R9
	ADDQ $32, R10
	ADDQ $32, R11
	ADDQ $32, R12
	ADDQ $32, R13
	SUBQ $8, CX
	JNZ  sq8
	VMOVUPD Z0, 0(BX)
	VZEROUPPER
	RET


// The storing kernels of pass 1 (adamDirStoreAVX512, nadamDirStoreAVX512):
// the sums of adamDirAVX512 (mode 2: telseg; else tel), and m', v' and
// float32(u) of every element written to out[0], out[1], out[2].
// func adamDirStoreAVX512(mode int, gr, m, v, p *float32, n int, k *adamConsts, acc *[6]float64, out *[3]*float32)
TEXT ·adamDirStoreAVX512(SB), NOSPLIT, $0-72
	MOVQ gr+8(FP), SI
	MOVQ m+16(FP), DI
	MOVQ v+24(FP), R8
	MOVQ p+32(FP), R9
	MOVQ n+40(FP), CX
	MOVQ k+48(FP), DX
	MOVQ acc+56(FP), BX
	MOVQ out+64(FP), AX
	MOVQ 0(AX), R10
	MOVQ 8(AX), R11
	MOVQ 16(AX), R12
	LOADK(DX)
	VMOVUPD 0(BX), X0
	VINSERTF128 $1, 32(BX), Y0, Y0
	VMOVUPD 16(BX), X4
	MOVQ mode+0(FP), AX
	CMPQ AX, $2
	JEQ  telseg

tel:
	DIR8
	STORE3
	SQ4
	TSUM4
	NEXT8
	JNZ  tel
	JMP  done

telseg:
	DIR8
	STORE3
	SQ4
	TSUM4X2(Y0, Y4)
	NEXT8
	JNZ  telseg

done:
	VMOVUPD X0, 0(BX)
	VEXTRACTF128 $1, Y0, 32(BX)
	VMOVUPD X4, 16(BX)
	VZEROUPPER
	RET

// func nadamDirStoreAVX512(mode int, gr, m, v, p *float32, n int, k *adamConsts, acc *[6]float64, out *[3]*float32)
TEXT ·nadamDirStoreAVX512(SB), NOSPLIT, $0-72
	MOVQ gr+8(FP), SI
	MOVQ m+16(FP), DI
	MOVQ v+24(FP), R8
	MOVQ p+32(FP), R9
	MOVQ n+40(FP), CX
	MOVQ k+48(FP), DX
	MOVQ acc+56(FP), BX
	MOVQ out+64(FP), AX
	MOVQ 0(AX), R10
	MOVQ 8(AX), R11
	MOVQ 16(AX), R12
	LOADK(DX)
	VBROADCASTSD 80(DX), Z25
	VBROADCASTSD 72(DX), Z31
	VMOVUPD 0(BX), X0
	VINSERTF128 $1, 32(BX), Y0, Y0
	VMOVUPD 16(BX), X4
	MOVQ mode+0(FP), AX
	CMPQ AX, $2
	JEQ  telseg

tel:
	DIR8N(Z25, Z31)
	STORE3
	SQ4
	TSUM4
	NEXT8
	JNZ  tel
	JMP  done

telseg:
	DIR8N(Z25, Z31)
	STORE3
	SQ4
	TSUM4X2(Y0, Y4)
	NEXT8
	JNZ  telseg

done:
	VMOVUPD X0, 0(BX)
	VEXTRACTF128 $1, Y0, 32(BX)
	VMOVUPD X4, 16(BX)
	VZEROUPPER
	RET

// func thetaAVX512(p, u *float32, n int, step float64)
// p[i] = float32(float64(p[i]) − step·float64(u[i])) for i < n, n a
// positive multiple of 8 (thetaGo; pass 2 of the double-buffered step).
TEXT ·thetaAVX512(SB), NOSPLIT, $0-32
	MOVQ p+0(FP), DI
	MOVQ u+8(FP), SI
	MOVQ n+16(FP), CX
	VBROADCASTSD step+24(FP), Z1

theta:
	VCVTPS2PD (SI), Z2
	VMULPD    Z1, Z2, Z2
	VCVTPS2PD (DI), Z3
	VSUBPD    Z2, Z3, Z3
	VCVTPD2PS Z3, Y3
	VMOVUPS   Y3, (DI)
	ADDQ      $32, DI
	ADDQ      $32, SI
	SUBQ      $8, CX
	JNZ       theta
	VZEROUPPER
	RET

// func thetaEMAAVX512(p, u, w *float32, n int, step, b, c float64)
// p[i] = float32(float64(p[i]) − step·float64(u[i])) as thetaAVX512, then
// w[i] = float32(b·float64(w[i]) + c·float64(p[i])) with the new p[i] as
// emaAVX512 computes it (the products and the sum in float64, each
// rounded, no FMA): pass 2 of the double-buffered step with the EMA of
// the weights folded in (thetaEMAGo). n is a positive multiple of 8.
TEXT ·thetaEMAAVX512(SB), NOSPLIT, $0-56
	MOVQ         p+0(FP), DI
	MOVQ         u+8(FP), SI
	MOVQ         w+16(FP), R8
	MOVQ         n+24(FP), CX
	VBROADCASTSD step+32(FP), Z1
	VBROADCASTSD b+40(FP), Z5
	VBROADCASTSD c+48(FP), Z6

thetaema:
	VCVTPS2PD (SI), Z2
	VMULPD    Z1, Z2, Z2
	VCVTPS2PD (DI), Z3
	VSUBPD    Z2, Z3, Z3
	VCVTPD2PS Z3, Y3
	VMOVUPS   Y3, (DI)
	VCVTPS2PD (R8), Z4
	VMULPD    Z5, Z4, Z4
	VCVTPS2PD Y3, Z3
	VMULPD    Z6, Z3, Z3
	VADDPD    Z3, Z4, Z4
	VCVTPD2PS Z4, Y4
	VMOVUPS   Y4, (R8)
	ADDQ      $32, DI
	ADDQ      $32, SI
	ADDQ      $32, R8
	SUBQ      $8, CX
	JNZ       thetaema
	VZEROUPPER
	RET
