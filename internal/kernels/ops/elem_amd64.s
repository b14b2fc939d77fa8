#include "textflag.h"

// Elementwise kernels, 8 lanes (AVX2) per step; the Go wrappers in
// elem_amd64.go pass lengths that are multiples of 8 and do the tails.
// Every lane runs the same float32 multiplies, adds and subtracts in the
// same order as the Go loops in ops.go (no fused multiply-add), so the
// results are bit-identical to them.

DATA elemOne<>+0(SB)/4, $0x3f800000
GLOBL elemOne<>(SB), RODATA|NOPTR, $4

// The loop bodies the AVX2 kernels run on Y registers and their AVX-512
// twins on Z registers (and on Y for a last block of 8): the lanes at
// offset R9 of each operand, the arguments naming the vector registers.

// SWIGLU_FWD: h = (g·σ)·u (DI h, AX g, BX sg, DX u).
#define SWIGLU_FWD(V0) \
	VMOVUPS (AX)(R9*1), V0; \
	VMULPS  (BX)(R9*1), V0, V0; \
	VMULPS  (DX)(R9*1), V0, V0; \
	VMOVUPS V0, (DI)(R9*1)

// SWIGLU_BACK: du = (d·g)·σ, dg = ((d·u)·σ)·(1 + g·(1 − σ)) (DI dg, SI du,
// AX d, BX g, DX u, R8 sg, V7 the ones).
#define SWIGLU_BACK(V0, V1, V3, V4, V5, V6, V7) \
	VMOVUPS (AX)(R9*1), V0; \
	VMOVUPS (BX)(R9*1), V1; \
	VMOVUPS (R8)(R9*1), V3; \
	VMULPS  V1, V0, V4; \
	VMULPS  V3, V4, V4; \
	VMOVUPS V4, (SI)(R9*1); \
	VMULPS  (DX)(R9*1), V0, V5; \
	VMULPS  V3, V5, V5; \
	VSUBPS  V3, V7, V6; \
	VMULPS  V6, V1, V6; \
	VADDPS  V6, V7, V6; \
	VMULPS  V6, V5, V5; \
	VMOVUPS V5, (DI)(R9*1)

// RMS_SCALE: y = (x·r)·w (DI y, AX x, BX w, V7 r).
#define RMS_SCALE(V0, V7) \
	VMULPS  (AX)(R9*1), V7, V0; \
	VMULPS  (BX)(R9*1), V0, V0; \
	VMOVUPS V0, (DI)(R9*1)

// RMS_TERMS: x̂ = x·r, t = (dy·w)·x̂, dw = dw + dy·x̂ (DI t, R8 dw, SI dy,
// AX x, BX w, V7 r).
#define RMS_TERMS(V0, V1, V2, V7) \
	VMULPS  (AX)(R9*1), V7, V0; \
	VMOVUPS (SI)(R9*1), V1; \
	VMULPS  (BX)(R9*1), V1, V2; \
	VMULPS  V0, V2, V2; \
	VMOVUPS V2, (DI)(R9*1); \
	VMULPS  V0, V1, V1; \
	VADDPS  (R8)(R9*1), V1, V1; \
	VMOVUPS V1, (R8)(R9*1)

// RMS_APPLY_G: V1 = r·(dy·w − (x·r)·m) (SI dy, AX x, BX w, V6 r, V7 m).
#define RMS_APPLY_G(V0, V1, V6, V7) \
	VMULPS  (AX)(R9*1), V6, V0; \
	VMULPS  V7, V0, V0; \
	VMOVUPS (SI)(R9*1), V1; \
	VMULPS  (BX)(R9*1), V1, V1; \
	VSUBPS  V0, V1, V1; \
	VMULPS  V6, V1, V1

// func swigluFwdAVX2(h, g, sg, u []float32)
// h = (g·σ)·u
TEXT ·swigluFwdAVX2(SB), NOSPLIT, $0-96
	MOVQ h_base+0(FP), DI
	MOVQ h_len+8(FP), CX
	MOVQ g_base+24(FP), AX
	MOVQ sg_base+48(FP), BX
	MOVQ u_base+72(FP), DX
	XORQ R9, R9
	SHRQ $3, CX
	JZ   fwddone

fwdloop:
	SWIGLU_FWD(Y0)
	ADDQ    $32, R9
	DECQ    CX
	JNZ     fwdloop

fwddone:
	VZEROUPPER
	RET

// func swigluBackAVX2(dg, du, d, g, u, sg []float32)
// du = (d·g)·σ,   dg = ((d·u)·σ)·(1 + g·(1 − σ))
TEXT ·swigluBackAVX2(SB), NOSPLIT, $0-144
	MOVQ dg_base+0(FP), DI
	MOVQ du_base+24(FP), SI
	MOVQ d_base+48(FP), AX
	MOVQ d_len+56(FP), CX
	MOVQ g_base+72(FP), BX
	MOVQ u_base+96(FP), DX
	MOVQ sg_base+120(FP), R8
	VBROADCASTSS elemOne<>(SB), Y7
	XORQ R9, R9
	SHRQ $3, CX
	JZ   backdone

backloop:
	SWIGLU_BACK(Y0, Y1, Y3, Y4, Y5, Y6, Y7)
	ADDQ    $32, R9
	DECQ    CX
	JNZ     backloop

backdone:
	VZEROUPPER
	RET

// func ropeAVX2(a, b, c, s []float32, sign float32)
// si = sign·s,   a' = a·c − b·si,   b' = b·c + a·si
TEXT ·ropeAVX2(SB), NOSPLIT, $0-100
	MOVQ a_base+0(FP), DI
	MOVQ a_len+8(FP), CX
	MOVQ b_base+24(FP), SI
	MOVQ c_base+48(FP), AX
	MOVQ s_base+72(FP), BX
	VBROADCASTSS sign+96(FP), Y7
	XORQ R9, R9
	SHRQ $3, CX
	JZ   ropedone

ropeloop:
	VMOVUPS (DI)(R9*1), Y0
	VMOVUPS (SI)(R9*1), Y1
	VMOVUPS (AX)(R9*1), Y2
	VMULPS  (BX)(R9*1), Y7, Y3
	VMULPS  Y2, Y0, Y4
	VMULPS  Y3, Y1, Y5
	VSUBPS  Y5, Y4, Y4
	VMULPS  Y2, Y1, Y5
	VMULPS  Y3, Y0, Y6
	VADDPS  Y6, Y5, Y5
	VMOVUPS Y4, (DI)(R9*1)
	VMOVUPS Y5, (SI)(R9*1)
	ADDQ    $32, R9
	DECQ    CX
	JNZ     ropeloop

ropedone:
	VZEROUPPER
	RET

// func maxAVX2(v []float32) (mx float32, ok bool)
// The largest element of v (len a multiple of 8, ≥ 8) by VMAXPS; ok is
// false when v holds a NaN (the Go wrappers then fall back to the scalar
// loop, whose NaN rules differ from VMAXPS's).
TEXT ·maxAVX2(SB), NOSPLIT, $0-29
	MOVQ    v_base+0(FP), AX
	MOVQ    v_len+8(FP), CX
	VMOVUPS (AX), Y0
	VCMPPS  $3, Y0, Y0, Y2
	MOVQ    $32, R9
	SHRQ    $3, CX
	DECQ    CX
	JZ      maxreduce
	// four accumulators while 32 floats are left (the maximum is exact,
	// so the order does not matter; NaN rows are flagged and redone by
	// the caller)
	VMOVAPS Y0, Y5
	VMOVAPS Y0, Y6
	VMOVAPS Y0, Y7

max4loop:
	CMPQ    CX, $4
	JLT     max4done
	VMOVUPS (AX)(R9*1), Y3
	VMOVUPS 32(AX)(R9*1), Y8
	VMOVUPS 64(AX)(R9*1), Y9
	VMOVUPS 96(AX)(R9*1), Y10
	VMAXPS  Y3, Y0, Y0
	VMAXPS  Y8, Y5, Y5
	VMAXPS  Y9, Y6, Y6
	VMAXPS  Y10, Y7, Y7
	VCMPPS  $3, Y3, Y8, Y4
	VORPS   Y4, Y2, Y2
	VCMPPS  $3, Y9, Y10, Y4
	VORPS   Y4, Y2, Y2
	ADDQ    $128, R9
	SUBQ    $4, CX
	JMP     max4loop

max4done:
	VMAXPS  Y5, Y0, Y0
	VMAXPS  Y7, Y6, Y6
	VMAXPS  Y6, Y0, Y0
	TESTQ   CX, CX
	JZ      maxreduce

maxloop:
	VMOVUPS (AX)(R9*1), Y3
	VMAXPS  Y3, Y0, Y0
	VCMPPS  $3, Y3, Y3, Y4
	VORPS   Y4, Y2, Y2
	ADDQ    $32, R9
	DECQ    CX
	JNZ     maxloop

maxreduce:
	VEXTRACTF128 $1, Y0, X1
	VMAXPS       X1, X0, X0
	VMOVHLPS     X0, X0, X1
	VMAXPS       X1, X0, X0
	VMOVSHDUP    X0, X1
	VMAXSS       X1, X0, X0
	MOVSS        X0, mx+24(FP)
	VMOVMSKPS    Y2, R10
	TESTQ        R10, R10
	SETEQ        ok+28(FP)
	VZEROUPPER
	RET

// func scaleToAVX2(dst, src []float32, s float32)
// dst = src·s
TEXT ·scaleToAVX2(SB), NOSPLIT, $0-52
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), CX
	MOVQ src_base+24(FP), AX
	VBROADCASTSS s+48(FP), Y7
	XORQ R9, R9
	SHRQ $3, CX
	JZ   scaledone

scaleloop:
	VMULPS  (AX)(R9*1), Y7, Y0
	VMOVUPS Y0, (DI)(R9*1)
	ADDQ    $32, R9
	DECQ    CX
	JNZ     scaleloop

scaledone:
	VZEROUPPER
	RET

// func rmsScaleAVX2(y, x, w []float32, r float32)
// y = (x·r)·w
TEXT ·rmsScaleAVX2(SB), NOSPLIT, $0-76
	MOVQ y_base+0(FP), DI
	MOVQ y_len+8(FP), CX
	MOVQ x_base+24(FP), AX
	MOVQ w_base+48(FP), BX
	VBROADCASTSS r+72(FP), Y7
	XORQ R9, R9
	SHRQ $3, CX
	JZ   rmsscaledone

rmsscaleloop:
	RMS_SCALE(Y0, Y7)
	ADDQ    $32, R9
	DECQ    CX
	JNZ     rmsscaleloop

rmsscaledone:
	VZEROUPPER
	RET

// func dsRowAVX2(dp, p []float32, dot float32)
// dp = p·(dp − dot)
TEXT ·dsRowAVX2(SB), NOSPLIT, $0-52
	MOVQ dp_base+0(FP), DI
	MOVQ dp_len+8(FP), CX
	MOVQ p_base+24(FP), AX
	VBROADCASTSS dot+48(FP), Y7
	XORQ R9, R9
	SHRQ $3, CX
	JZ   dsdone

dsloop:
	VMOVUPS (DI)(R9*1), Y0
	VSUBPS  Y7, Y0, Y0
	VMULPS  (AX)(R9*1), Y0, Y0
	VMOVUPS Y0, (DI)(R9*1)
	ADDQ    $32, R9
	DECQ    CX
	JNZ     dsloop

dsdone:
	VZEROUPPER
	RET

// func rmsBackTermsAVX2(t, dw, dy, x, w []float32, r float32)
// x̂ = x·r;  t = (dy·w)·x̂;  dw = dw + dy·x̂
TEXT ·rmsBackTermsAVX2(SB), NOSPLIT, $0-124
	MOVQ t_base+0(FP), DI
	MOVQ t_len+8(FP), CX
	MOVQ dw_base+24(FP), R8
	MOVQ dy_base+48(FP), SI
	MOVQ x_base+72(FP), AX
	MOVQ w_base+96(FP), BX
	VBROADCASTSS r+120(FP), Y7
	XORQ R9, R9
	SHRQ $3, CX
	JZ   rmstermsdone

rmstermsloop:
	RMS_TERMS(Y0, Y1, Y2, Y7)
	ADDQ    $32, R9
	DECQ    CX
	JNZ     rmstermsloop

rmstermsdone:
	VZEROUPPER
	RET

// func rmsBackApplyAVX2(dx, dy, x, w []float32, r, m float32, add bool)
// g = r·(dy·w − (x·r)·m);  dx = dx + g (add) or g
TEXT ·rmsBackApplyAVX2(SB), NOSPLIT, $0-105
	MOVQ dx_base+0(FP), DI
	MOVQ dx_len+8(FP), CX
	MOVQ dy_base+24(FP), SI
	MOVQ x_base+48(FP), AX
	MOVQ w_base+72(FP), BX
	VBROADCASTSS r+96(FP), Y6
	VBROADCASTSS m+100(FP), Y7
	MOVBLZX add+104(FP), DX
	XORQ R9, R9
	SHRQ $3, CX
	JZ   rmsapplydone
	TESTQ DX, DX
	JZ   rmssetloop

rmsaddloop:
	RMS_APPLY_G(Y0, Y1, Y6, Y7)
	VADDPS  (DI)(R9*1), Y1, Y1
	VMOVUPS Y1, (DI)(R9*1)
	ADDQ    $32, R9
	DECQ    CX
	JNZ     rmsaddloop
	JMP     rmsapplydone

rmssetloop:
	RMS_APPLY_G(Y0, Y1, Y6, Y7)
	VMOVUPS Y1, (DI)(R9*1)
	ADDQ    $32, R9
	DECQ    CX
	JNZ     rmssetloop

rmsapplydone:
	VZEROUPPER
	RET

// func ropeRowsAVX512(x *float32, stride int, c, s *float32, p0, T, rows, nh, hd int, sign float32)
// ropeAVX2's rotation over rows rows of x (row stride stride floats), nh
// heads of hd each (hd/2 a multiple of 8), row r at position
// (p0 + r) mod T of the tables c, s: the same instructions per lane, 16
// lanes at a time (a last block of 8 in a YMM register), one call for
// all the rows.
TEXT ·ropeRowsAVX512(SB), NOSPLIT, $0-76
	MOVQ x+0(FP), DI
	MOVQ stride+8(FP), R14
	SHLQ $2, R14
	MOVQ c+16(FP), SI
	MOVQ s+24(FP), BX
	MOVQ p0+32(FP), R8
	MOVQ rows+48(FP), R10
	MOVQ hd+64(FP), R12
	SHLQ $2, R12
	MOVQ R12, R13
	SHRQ $1, R13
	VBROADCASTSS sign+72(FP), Z7

roperow:
	TESTQ R10, R10
	JZ    roperowsdone
	MOVQ  R8, AX
	IMULQ R13, AX
	LEAQ  (SI)(AX*1), CX
	LEAQ  (BX)(AX*1), DX
	MOVQ  DI, AX
	MOVQ  nh+56(FP), R15

ropehead:
	XORQ R9, R9

ropeblk16:
	MOVQ R13, R11
	SUBQ R9, R11
	CMPQ R11, $64
	JLT  ropeblk8
	LEAQ (AX)(R13*1), R11
	VMOVUPS (AX)(R9*1), Z0
	VMOVUPS (R11)(R9*1), Z1
	VMOVUPS (CX)(R9*1), Z2
	VMULPS  (DX)(R9*1), Z7, Z3
	VMULPS  Z2, Z0, Z4
	VMULPS  Z3, Z1, Z5
	VSUBPS  Z5, Z4, Z4
	VMULPS  Z2, Z1, Z5
	VMULPS  Z3, Z0, Z6
	VADDPS  Z6, Z5, Z5
	VMOVUPS Z4, (AX)(R9*1)
	VMOVUPS Z5, (R11)(R9*1)
	ADDQ    $64, R9
	JMP     ropeblk16

ropeblk8:
	CMPQ R11, $32
	JLT  ropeheadnext
	LEAQ (AX)(R13*1), R11
	VMOVUPS (AX)(R9*1), Y0
	VMOVUPS (R11)(R9*1), Y1
	VMOVUPS (CX)(R9*1), Y2
	VMULPS  (DX)(R9*1), Y7, Y3
	VMULPS  Y2, Y0, Y4
	VMULPS  Y3, Y1, Y5
	VSUBPS  Y5, Y4, Y4
	VMULPS  Y2, Y1, Y5
	VMULPS  Y3, Y0, Y6
	VADDPS  Y6, Y5, Y5
	VMOVUPS Y4, (AX)(R9*1)
	VMOVUPS Y5, (R11)(R9*1)

ropeheadnext:
	ADDQ R12, AX
	DECQ R15
	JNZ  ropehead
	ADDQ R14, DI
	INCQ R8
	CMPQ R8, T+40(FP)
	JLT  ropenowrap
	XORQ R8, R8

ropenowrap:
	DECQ R10
	JMP  roperow

roperowsdone:
	VZEROUPPER
	RET

// func swigluFwdAVX512(h, g, sg, u []float32)
// swigluFwdAVX2 16 lanes at a time (len a multiple of 8; a last block of
// 8 in a YMM register): the same instructions per lane.
TEXT ·swigluFwdAVX512(SB), NOSPLIT, $0-96
	MOVQ h_base+0(FP), DI
	MOVQ h_len+8(FP), CX
	MOVQ g_base+24(FP), AX
	MOVQ sg_base+48(FP), BX
	MOVQ u_base+72(FP), DX
	XORQ R9, R9
	SHRQ $3, CX
	MOVQ CX, R8
	SHRQ $1, CX
	JZ   fwd512tail

fwd512loop:
	SWIGLU_FWD(Z0)
	ADDQ    $64, R9
	DECQ    CX
	JNZ     fwd512loop

fwd512tail:
	TESTQ $1, R8
	JZ    fwd512done
	SWIGLU_FWD(Y0)

fwd512done:
	VZEROUPPER
	RET

// func swigluBackAVX512(dg, du, d, g, u, sg []float32)
// swigluBackAVX2 16 lanes at a time (len a multiple of 8; a last block
// of 8 in YMM registers): the same instructions per lane.
TEXT ·swigluBackAVX512(SB), NOSPLIT, $0-144
	MOVQ dg_base+0(FP), DI
	MOVQ du_base+24(FP), SI
	MOVQ d_base+48(FP), AX
	MOVQ d_len+56(FP), CX
	MOVQ g_base+72(FP), BX
	MOVQ u_base+96(FP), DX
	MOVQ sg_base+120(FP), R8
	VBROADCASTSS elemOne<>(SB), Z7
	XORQ R9, R9
	SHRQ $3, CX
	MOVQ CX, R10
	SHRQ $1, CX
	JZ   back512tail

back512loop:
	SWIGLU_BACK(Z0, Z1, Z3, Z4, Z5, Z6, Z7)
	ADDQ    $64, R9
	DECQ    CX
	JNZ     back512loop

back512tail:
	TESTQ $1, R10
	JZ    back512done
	SWIGLU_BACK(Y0, Y1, Y3, Y4, Y5, Y6, Y7)

back512done:
	VZEROUPPER
	RET

// TRANSPOSE16 loads the 16×16 block of rows SI, SI+R8, …, SI+R11 and DI,
// DI+R8, …, DI+R11 (R8 the row stride in bytes, R9 = 3·R8, R10 = 5·R8,
// R11 = 7·R8, DI = SI+8·R8) and transposes it in registers (unpacks, then
// 128-bit shuffles) as far as the last shuffle: column c of the block is
// then VSHUFF32X4 $0x88 (c < 8) or $0xDD (c ≥ 8) of the register pairs
// (Z18, Z26), (Z20, Z28), (Z22, Z0), (Z24, Z2), (Z19, Z27), (Z21, Z29),
// (Z23, Z1), (Z25, Z3) in that order. It clobbers Z0–Z29.
#define TRANSPOSE16 \
	VMOVUPS (SI), Z0; \
	VMOVUPS (SI)(R8*1), Z1; \
	VMOVUPS (SI)(R8*2), Z2; \
	VMOVUPS (SI)(R9*1), Z3; \
	VMOVUPS (SI)(R8*4), Z4; \
	VMOVUPS (SI)(R10*1), Z5; \
	VMOVUPS (SI)(R9*2), Z6; \
	VMOVUPS (SI)(R11*1), Z7; \
	VMOVUPS (DI), Z8; \
	VMOVUPS (DI)(R8*1), Z9; \
	VMOVUPS (DI)(R8*2), Z10; \
	VMOVUPS (DI)(R9*1), Z11; \
	VMOVUPS (DI)(R8*4), Z12; \
	VMOVUPS (DI)(R10*1), Z13; \
	VMOVUPS (DI)(R9*2), Z14; \
	VMOVUPS (DI)(R11*1), Z15; \
	VUNPCKLPS Z1, Z0, Z16; \
	VUNPCKHPS Z1, Z0, Z17; \
	VUNPCKLPS Z3, Z2, Z18; \
	VUNPCKHPS Z3, Z2, Z19; \
	VUNPCKLPS Z5, Z4, Z20; \
	VUNPCKHPS Z5, Z4, Z21; \
	VUNPCKLPS Z7, Z6, Z22; \
	VUNPCKHPS Z7, Z6, Z23; \
	VUNPCKLPS Z9, Z8, Z24; \
	VUNPCKHPS Z9, Z8, Z25; \
	VUNPCKLPS Z11, Z10, Z26; \
	VUNPCKHPS Z11, Z10, Z27; \
	VUNPCKLPS Z13, Z12, Z28; \
	VUNPCKHPS Z13, Z12, Z29; \
	VUNPCKLPS Z15, Z14, Z0; \
	VUNPCKHPS Z15, Z14, Z1; \
	VUNPCKLPD Z18, Z16, Z2; \
	VUNPCKHPD Z18, Z16, Z3; \
	VUNPCKLPD Z19, Z17, Z4; \
	VUNPCKHPD Z19, Z17, Z5; \
	VUNPCKLPD Z22, Z20, Z6; \
	VUNPCKHPD Z22, Z20, Z7; \
	VUNPCKLPD Z23, Z21, Z8; \
	VUNPCKHPD Z23, Z21, Z9; \
	VUNPCKLPD Z26, Z24, Z10; \
	VUNPCKHPD Z26, Z24, Z11; \
	VUNPCKLPD Z27, Z25, Z12; \
	VUNPCKHPD Z27, Z25, Z13; \
	VUNPCKLPD Z0, Z28, Z14; \
	VUNPCKHPD Z0, Z28, Z15; \
	VUNPCKLPD Z1, Z29, Z16; \
	VUNPCKHPD Z1, Z29, Z17; \
	VSHUFF32X4 $0x88, Z6, Z2, Z18; \
	VSHUFF32X4 $0xDD, Z6, Z2, Z19; \
	VSHUFF32X4 $0x88, Z7, Z3, Z20; \
	VSHUFF32X4 $0xDD, Z7, Z3, Z21; \
	VSHUFF32X4 $0x88, Z8, Z4, Z22; \
	VSHUFF32X4 $0xDD, Z8, Z4, Z23; \
	VSHUFF32X4 $0x88, Z9, Z5, Z24; \
	VSHUFF32X4 $0xDD, Z9, Z5, Z25; \
	VSHUFF32X4 $0x88, Z14, Z10, Z26; \
	VSHUFF32X4 $0xDD, Z14, Z10, Z27; \
	VSHUFF32X4 $0x88, Z15, Z11, Z28; \
	VSHUFF32X4 $0xDD, Z15, Z11, Z29; \
	VSHUFF32X4 $0x88, Z16, Z12, Z0; \
	VSHUFF32X4 $0xDD, Z16, Z12, Z1; \
	VSHUFF32X4 $0x88, Z17, Z13, Z2; \
	VSHUFF32X4 $0xDD, Z17, Z13, Z3

// func sumSquares16AVX512(x *float32, C int, out *[16]float32)
// out[q] = Σ_j x[q·C+j]² for the rows q < 16 (C a multiple of 16, ≥ 16),
// each one float32 chain in order j = 0, 1, … of a rounded product and a
// rounded sum, as sumSquares4's Go loop computes it: lane q of Z30 is row
// q's chain. Each block of 16 columns is loaded row by row and transposed
// in registers (unpacks, then 128-bit shuffles), and its columns are
// added in order.
TEXT ·sumSquares16AVX512(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), SI
	MOVQ C+8(FP), CX
	MOVQ out+16(FP), DX
	MOVQ CX, R8
	SHLQ $2, R8
	LEAQ (R8)(R8*2), R9
	LEAQ (R8)(R8*4), R10
	LEAQ (R9)(R8*4), R11
	LEAQ (SI)(R8*8), DI
	SHRQ $4, CX
	VXORPS Z30, Z30, Z30

sq16loop:
	TRANSPOSE16
	VSHUFF32X4 $0x88, Z26, Z18, Z31
	VMULPS Z31, Z31, Z31
	VADDPS Z31, Z30, Z30
	VSHUFF32X4 $0x88, Z28, Z20, Z31
	VMULPS Z31, Z31, Z31
	VADDPS Z31, Z30, Z30
	VSHUFF32X4 $0x88, Z0, Z22, Z31
	VMULPS Z31, Z31, Z31
	VADDPS Z31, Z30, Z30
	VSHUFF32X4 $0x88, Z2, Z24, Z31
	VMULPS Z31, Z31, Z31
	VADDPS Z31, Z30, Z30
	VSHUFF32X4 $0x88, Z27, Z19, Z31
	VMULPS Z31, Z31, Z31
	VADDPS Z31, Z30, Z30
	VSHUFF32X4 $0x88, Z29, Z21, Z31
	VMULPS Z31, Z31, Z31
	VADDPS Z31, Z30, Z30
	VSHUFF32X4 $0x88, Z1, Z23, Z31
	VMULPS Z31, Z31, Z31
	VADDPS Z31, Z30, Z30
	VSHUFF32X4 $0x88, Z3, Z25, Z31
	VMULPS Z31, Z31, Z31
	VADDPS Z31, Z30, Z30
	VSHUFF32X4 $0xDD, Z26, Z18, Z31
	VMULPS Z31, Z31, Z31
	VADDPS Z31, Z30, Z30
	VSHUFF32X4 $0xDD, Z28, Z20, Z31
	VMULPS Z31, Z31, Z31
	VADDPS Z31, Z30, Z30
	VSHUFF32X4 $0xDD, Z0, Z22, Z31
	VMULPS Z31, Z31, Z31
	VADDPS Z31, Z30, Z30
	VSHUFF32X4 $0xDD, Z2, Z24, Z31
	VMULPS Z31, Z31, Z31
	VADDPS Z31, Z30, Z30
	VSHUFF32X4 $0xDD, Z27, Z19, Z31
	VMULPS Z31, Z31, Z31
	VADDPS Z31, Z30, Z30
	VSHUFF32X4 $0xDD, Z29, Z21, Z31
	VMULPS Z31, Z31, Z31
	VADDPS Z31, Z30, Z30
	VSHUFF32X4 $0xDD, Z1, Z23, Z31
	VMULPS Z31, Z31, Z31
	VADDPS Z31, Z30, Z30
	VSHUFF32X4 $0xDD, Z3, Z25, Z31
	VMULPS Z31, Z31, Z31
	VADDPS Z31, Z30, Z30
	ADDQ $64, SI
	ADDQ $64, DI
	DECQ CX
	JNZ  sq16loop
	VMOVUPS Z30, (DX)
	VZEROUPPER
	RET

// func rmsScaleAVX512(y, x, w []float32, r float32)
// rmsScaleAVX2 16 lanes at a time (len a multiple of 8; a last block of
// 8 in a YMM register): the same instructions per lane.
TEXT ·rmsScaleAVX512(SB), NOSPLIT, $0-76
	MOVQ y_base+0(FP), DI
	MOVQ y_len+8(FP), CX
	MOVQ x_base+24(FP), AX
	MOVQ w_base+48(FP), BX
	VBROADCASTSS r+72(FP), Z7
	XORQ R9, R9
	SHRQ $3, CX
	MOVQ CX, R8
	SHRQ $1, CX
	JZ   rmsscale512tail

rmsscale512loop:
	RMS_SCALE(Z0, Z7)
	ADDQ    $64, R9
	DECQ    CX
	JNZ     rmsscale512loop

rmsscale512tail:
	TESTQ $1, R8
	JZ    rmsscale512done
	RMS_SCALE(Y0, Y7)

rmsscale512done:
	VZEROUPPER
	RET

// func sumRows16AVX512(x *float32, C int, out *[16]float32)
// out[q] += Σ_j x[q·C+j] for the rows q < 16 (C a multiple of 16, ≥ 16),
// each one float32 chain from out[q] in order j = 0, 1, …, as seqSums
// adds a row: sumSquares16AVX512's transpose, without the squares.
TEXT ·sumRows16AVX512(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), SI
	MOVQ C+8(FP), CX
	MOVQ out+16(FP), DX
	MOVQ CX, R8
	SHLQ $2, R8
	LEAQ (R8)(R8*2), R9
	LEAQ (R8)(R8*4), R10
	LEAQ (R9)(R8*4), R11
	LEAQ (SI)(R8*8), DI
	SHRQ $4, CX
	VMOVUPS (DX), Z30

sr16loop:
	TRANSPOSE16
	VSHUFF32X4 $0x88, Z26, Z18, Z31
	VADDPS Z31, Z30, Z30
	VSHUFF32X4 $0x88, Z28, Z20, Z31
	VADDPS Z31, Z30, Z30
	VSHUFF32X4 $0x88, Z0, Z22, Z31
	VADDPS Z31, Z30, Z30
	VSHUFF32X4 $0x88, Z2, Z24, Z31
	VADDPS Z31, Z30, Z30
	VSHUFF32X4 $0x88, Z27, Z19, Z31
	VADDPS Z31, Z30, Z30
	VSHUFF32X4 $0x88, Z29, Z21, Z31
	VADDPS Z31, Z30, Z30
	VSHUFF32X4 $0x88, Z1, Z23, Z31
	VADDPS Z31, Z30, Z30
	VSHUFF32X4 $0x88, Z3, Z25, Z31
	VADDPS Z31, Z30, Z30
	VSHUFF32X4 $0xDD, Z26, Z18, Z31
	VADDPS Z31, Z30, Z30
	VSHUFF32X4 $0xDD, Z28, Z20, Z31
	VADDPS Z31, Z30, Z30
	VSHUFF32X4 $0xDD, Z0, Z22, Z31
	VADDPS Z31, Z30, Z30
	VSHUFF32X4 $0xDD, Z2, Z24, Z31
	VADDPS Z31, Z30, Z30
	VSHUFF32X4 $0xDD, Z27, Z19, Z31
	VADDPS Z31, Z30, Z30
	VSHUFF32X4 $0xDD, Z29, Z21, Z31
	VADDPS Z31, Z30, Z30
	VSHUFF32X4 $0xDD, Z1, Z23, Z31
	VADDPS Z31, Z30, Z30
	VSHUFF32X4 $0xDD, Z3, Z25, Z31
	VADDPS Z31, Z30, Z30
	ADDQ $64, SI
	ADDQ $64, DI
	DECQ CX
	JNZ  sr16loop
	VMOVUPS Z30, (DX)
	VZEROUPPER
	RET

// func rmsBackTermsAVX512(t, dw, dy, x, w []float32, r float32)
// rmsBackTermsAVX2 16 lanes at a time (len a multiple of 8; a last block
// of 8 in YMM registers): the same instructions per lane.
TEXT ·rmsBackTermsAVX512(SB), NOSPLIT, $0-124
	MOVQ t_base+0(FP), DI
	MOVQ t_len+8(FP), CX
	MOVQ dw_base+24(FP), R8
	MOVQ dy_base+48(FP), SI
	MOVQ x_base+72(FP), AX
	MOVQ w_base+96(FP), BX
	VBROADCASTSS r+120(FP), Z7
	XORQ R9, R9
	SHRQ $3, CX
	MOVQ CX, R10
	SHRQ $1, CX
	JZ   rmsterms512tail

rmsterms512loop:
	RMS_TERMS(Z0, Z1, Z2, Z7)
	ADDQ    $64, R9
	DECQ    CX
	JNZ     rmsterms512loop

rmsterms512tail:
	TESTQ $1, R10
	JZ    rmsterms512done
	RMS_TERMS(Y0, Y1, Y2, Y7)

rmsterms512done:
	VZEROUPPER
	RET

// func rmsBackApplyAVX512(dx, dy, x, w []float32, r, m float32, add bool)
// rmsBackApplyAVX2 16 lanes at a time (len a multiple of 8; a last block
// of 8 in YMM registers): the same instructions per lane.
TEXT ·rmsBackApplyAVX512(SB), NOSPLIT, $0-105
	MOVQ dx_base+0(FP), DI
	MOVQ dx_len+8(FP), CX
	MOVQ dy_base+24(FP), SI
	MOVQ x_base+48(FP), AX
	MOVQ w_base+72(FP), BX
	VBROADCASTSS r+96(FP), Z6
	VBROADCASTSS m+100(FP), Z7
	MOVBLZX add+104(FP), DX
	XORQ R9, R9
	SHRQ $3, CX
	MOVQ CX, R10
	SHRQ $1, CX
	JZ   rmsapply512tail

rmsapply512loop:
	RMS_APPLY_G(Z0, Z1, Z6, Z7)
	TESTQ   DX, DX
	JZ      rmsapply512set
	VADDPS  (DI)(R9*1), Z1, Z1

rmsapply512set:
	VMOVUPS Z1, (DI)(R9*1)
	ADDQ    $64, R9
	DECQ    CX
	JNZ     rmsapply512loop

rmsapply512tail:
	TESTQ $1, R10
	JZ    rmsapply512done
	RMS_APPLY_G(Y0, Y1, Y6, Y7)
	TESTQ   DX, DX
	JZ      rmsapply512tailset
	VADDPS  (DI)(R9*1), Y1, Y1

rmsapply512tailset:
	VMOVUPS Y1, (DI)(R9*1)

rmsapply512done:
	VZEROUPPER
	RET
