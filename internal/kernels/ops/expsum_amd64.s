#include "textflag.h"
#include "exp_amd64.h"

DATA expLog2e<>+0(SB)/4, $0x3fb8aa3b
DATA expLog2e<>+4(SB)/4, $0x3fb8aa3b
DATA expLog2e<>+8(SB)/4, $0x3fb8aa3b
DATA expLog2e<>+12(SB)/4, $0x3fb8aa3b
DATA expLog2e<>+16(SB)/4, $0x3fb8aa3b
DATA expLog2e<>+20(SB)/4, $0x3fb8aa3b
DATA expLog2e<>+24(SB)/4, $0x3fb8aa3b
DATA expLog2e<>+28(SB)/4, $0x3fb8aa3b
GLOBL expLog2e<>(SB), RODATA|NOPTR, $32

DATA expMagic<>+0(SB)/4, $0x4b400000
DATA expMagic<>+4(SB)/4, $0x4b400000
DATA expMagic<>+8(SB)/4, $0x4b400000
DATA expMagic<>+12(SB)/4, $0x4b400000
DATA expMagic<>+16(SB)/4, $0x4b400000
DATA expMagic<>+20(SB)/4, $0x4b400000
DATA expMagic<>+24(SB)/4, $0x4b400000
DATA expMagic<>+28(SB)/4, $0x4b400000
GLOBL expMagic<>(SB), RODATA|NOPTR, $32

DATA expLn2hi<>+0(SB)/4, $0x3f318000
DATA expLn2hi<>+4(SB)/4, $0x3f318000
DATA expLn2hi<>+8(SB)/4, $0x3f318000
DATA expLn2hi<>+12(SB)/4, $0x3f318000
DATA expLn2hi<>+16(SB)/4, $0x3f318000
DATA expLn2hi<>+20(SB)/4, $0x3f318000
DATA expLn2hi<>+24(SB)/4, $0x3f318000
DATA expLn2hi<>+28(SB)/4, $0x3f318000
GLOBL expLn2hi<>(SB), RODATA|NOPTR, $32

DATA expLn2lo<>+0(SB)/4, $0xb95e8083
DATA expLn2lo<>+4(SB)/4, $0xb95e8083
DATA expLn2lo<>+8(SB)/4, $0xb95e8083
DATA expLn2lo<>+12(SB)/4, $0xb95e8083
DATA expLn2lo<>+16(SB)/4, $0xb95e8083
DATA expLn2lo<>+20(SB)/4, $0xb95e8083
DATA expLn2lo<>+24(SB)/4, $0xb95e8083
DATA expLn2lo<>+28(SB)/4, $0xb95e8083
GLOBL expLn2lo<>(SB), RODATA|NOPTR, $32

DATA expMin<>+0(SB)/4, $0xc2ae0000
DATA expMin<>+4(SB)/4, $0xc2ae0000
DATA expMin<>+8(SB)/4, $0xc2ae0000
DATA expMin<>+12(SB)/4, $0xc2ae0000
DATA expMin<>+16(SB)/4, $0xc2ae0000
DATA expMin<>+20(SB)/4, $0xc2ae0000
DATA expMin<>+24(SB)/4, $0xc2ae0000
DATA expMin<>+28(SB)/4, $0xc2ae0000
GLOBL expMin<>(SB), RODATA|NOPTR, $32

DATA expC7<>+0(SB)/4, $0x39500d01
DATA expC7<>+4(SB)/4, $0x39500d01
DATA expC7<>+8(SB)/4, $0x39500d01
DATA expC7<>+12(SB)/4, $0x39500d01
DATA expC7<>+16(SB)/4, $0x39500d01
DATA expC7<>+20(SB)/4, $0x39500d01
DATA expC7<>+24(SB)/4, $0x39500d01
DATA expC7<>+28(SB)/4, $0x39500d01
GLOBL expC7<>(SB), RODATA|NOPTR, $32

DATA expC6<>+0(SB)/4, $0x3ab60b61
DATA expC6<>+4(SB)/4, $0x3ab60b61
DATA expC6<>+8(SB)/4, $0x3ab60b61
DATA expC6<>+12(SB)/4, $0x3ab60b61
DATA expC6<>+16(SB)/4, $0x3ab60b61
DATA expC6<>+20(SB)/4, $0x3ab60b61
DATA expC6<>+24(SB)/4, $0x3ab60b61
DATA expC6<>+28(SB)/4, $0x3ab60b61
GLOBL expC6<>(SB), RODATA|NOPTR, $32

DATA expC5<>+0(SB)/4, $0x3c088889
DATA expC5<>+4(SB)/4, $0x3c088889
DATA expC5<>+8(SB)/4, $0x3c088889
DATA expC5<>+12(SB)/4, $0x3c088889
DATA expC5<>+16(SB)/4, $0x3c088889
DATA expC5<>+20(SB)/4, $0x3c088889
DATA expC5<>+24(SB)/4, $0x3c088889
DATA expC5<>+28(SB)/4, $0x3c088889
GLOBL expC5<>(SB), RODATA|NOPTR, $32

DATA expC4<>+0(SB)/4, $0x3d2aaaab
DATA expC4<>+4(SB)/4, $0x3d2aaaab
DATA expC4<>+8(SB)/4, $0x3d2aaaab
DATA expC4<>+12(SB)/4, $0x3d2aaaab
DATA expC4<>+16(SB)/4, $0x3d2aaaab
DATA expC4<>+20(SB)/4, $0x3d2aaaab
DATA expC4<>+24(SB)/4, $0x3d2aaaab
DATA expC4<>+28(SB)/4, $0x3d2aaaab
GLOBL expC4<>(SB), RODATA|NOPTR, $32

DATA expC3<>+0(SB)/4, $0x3e2aaaab
DATA expC3<>+4(SB)/4, $0x3e2aaaab
DATA expC3<>+8(SB)/4, $0x3e2aaaab
DATA expC3<>+12(SB)/4, $0x3e2aaaab
DATA expC3<>+16(SB)/4, $0x3e2aaaab
DATA expC3<>+20(SB)/4, $0x3e2aaaab
DATA expC3<>+24(SB)/4, $0x3e2aaaab
DATA expC3<>+28(SB)/4, $0x3e2aaaab
GLOBL expC3<>(SB), RODATA|NOPTR, $32

DATA expC2<>+0(SB)/4, $0x3f000000
DATA expC2<>+4(SB)/4, $0x3f000000
DATA expC2<>+8(SB)/4, $0x3f000000
DATA expC2<>+12(SB)/4, $0x3f000000
DATA expC2<>+16(SB)/4, $0x3f000000
DATA expC2<>+20(SB)/4, $0x3f000000
DATA expC2<>+24(SB)/4, $0x3f000000
DATA expC2<>+28(SB)/4, $0x3f000000
GLOBL expC2<>(SB), RODATA|NOPTR, $32

DATA expOne<>+0(SB)/4, $0x3f800000
DATA expOne<>+4(SB)/4, $0x3f800000
DATA expOne<>+8(SB)/4, $0x3f800000
DATA expOne<>+12(SB)/4, $0x3f800000
DATA expOne<>+16(SB)/4, $0x3f800000
DATA expOne<>+20(SB)/4, $0x3f800000
DATA expOne<>+24(SB)/4, $0x3f800000
DATA expOne<>+28(SB)/4, $0x3f800000
GLOBL expOne<>(SB), RODATA|NOPTR, $32

DATA expMax<>+0(SB)/4, $0x42b00000
DATA expMax<>+4(SB)/4, $0x42b00000
DATA expMax<>+8(SB)/4, $0x42b00000
DATA expMax<>+12(SB)/4, $0x42b00000
DATA expMax<>+16(SB)/4, $0x42b00000
DATA expMax<>+20(SB)/4, $0x42b00000
DATA expMax<>+24(SB)/4, $0x42b00000
DATA expMax<>+28(SB)/4, $0x42b00000
GLOBL expMax<>(SB), RODATA|NOPTR, $32
DATA expSign<>+0(SB)/4, $0x80000000
DATA expSign<>+4(SB)/4, $0x80000000
DATA expSign<>+8(SB)/4, $0x80000000
DATA expSign<>+12(SB)/4, $0x80000000
DATA expSign<>+16(SB)/4, $0x80000000
DATA expSign<>+20(SB)/4, $0x80000000
DATA expSign<>+24(SB)/4, $0x80000000
DATA expSign<>+28(SB)/4, $0x80000000
GLOBL expSign<>(SB), RODATA|NOPTR, $32

// func expShiftSumAVX2(dst, src []float32, mx float32) float32
// Requires AVX2 and FMA; handles len(src) rounded down to a multiple of 8.
TEXT ·expShiftSumAVX2(SB), NOSPLIT, $0-60
	MOVQ dst_base+0(FP), DI
	MOVQ src_base+24(FP), SI
	MOVQ src_len+32(FP), CX
	SHRQ $3, CX
	VBROADCASTSS mx+48(FP), Y0
	VXORPS Y13, Y13, Y13
	TESTQ CX, CX
	JZ done

loop:
	VMOVUPS (SI), Y1
	VSUBPS Y0, Y1, Y1
	VMAXPS expMin<>(SB), Y1, Y1
	VMOVUPS expLog2e<>(SB), Y2
	VFMADD213PS expMagic<>(SB), Y1, Y2
	VSUBPS expMagic<>(SB), Y2, Y3
	VFNMADD231PS expLn2hi<>(SB), Y3, Y1
	VFNMADD231PS expLn2lo<>(SB), Y3, Y1
	VMOVUPS expC7<>(SB), Y4
	VFMADD213PS expC6<>(SB), Y1, Y4
	VFMADD213PS expC5<>(SB), Y1, Y4
	VFMADD213PS expC4<>(SB), Y1, Y4
	VFMADD213PS expC3<>(SB), Y1, Y4
	VFMADD213PS expC2<>(SB), Y1, Y4
	VFMADD213PS expOne<>(SB), Y1, Y4
	VFMADD213PS expOne<>(SB), Y1, Y4
	VPSLLD $23, Y2, Y2
	VPADDD expOne<>(SB), Y2, Y2
	VMULPS Y2, Y4, Y4
	VMOVUPS Y4, (DI)
	VADDPS Y4, Y13, Y13
	ADDQ $32, SI
	ADDQ $32, DI
	DECQ CX
	JNZ loop

done:
	VEXTRACTF128 $1, Y13, X1
	VADDPS X1, X13, X13
	VHADDPS X13, X13, X13
	VHADDPS X13, X13, X13
	VZEROUPPER
	MOVSS X13, ret+56(FP)
	RET

// func sigmoidAVX2(dst, src []float32)
// dst[i] = 1/(1+e^(−src[i])) with the exponent clamped to [−87, 88];
// requires AVX2 and FMA; handles len(src) rounded down to a multiple of 8.
TEXT ·sigmoidAVX2(SB), NOSPLIT, $0-48
	MOVQ dst_base+0(FP), DI
	MOVQ src_base+24(FP), SI
	MOVQ src_len+32(FP), CX
	SHRQ $3, CX
	TESTQ CX, CX
	JZ sdone

sloop:
	VMOVUPS (SI), Y1
	VXORPS expSign<>(SB), Y1, Y1
	VMAXPS expMin<>(SB), Y1, Y1
	VMINPS expMax<>(SB), Y1, Y1
	VMOVUPS expLog2e<>(SB), Y2
	VFMADD213PS expMagic<>(SB), Y1, Y2
	VSUBPS expMagic<>(SB), Y2, Y3
	VFNMADD231PS expLn2hi<>(SB), Y3, Y1
	VFNMADD231PS expLn2lo<>(SB), Y3, Y1
	VMOVUPS expC7<>(SB), Y4
	VFMADD213PS expC6<>(SB), Y1, Y4
	VFMADD213PS expC5<>(SB), Y1, Y4
	VFMADD213PS expC4<>(SB), Y1, Y4
	VFMADD213PS expC3<>(SB), Y1, Y4
	VFMADD213PS expC2<>(SB), Y1, Y4
	VFMADD213PS expOne<>(SB), Y1, Y4
	VFMADD213PS expOne<>(SB), Y1, Y4
	VPSLLD $23, Y2, Y2
	VPADDD expOne<>(SB), Y2, Y2
	VMULPS Y2, Y4, Y4
	VADDPS expOne<>(SB), Y4, Y4
	VMOVUPS expOne<>(SB), Y5
	VDIVPS Y4, Y5, Y5
	VMOVUPS Y5, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	DECQ CX
	JNZ sloop

sdone:
	VZEROUPPER
	RET

// The 16-lane (AVX-512) twins of the kernels above. They use the same
// constants (the first 4 bytes of each, broadcast by exp_amd64.h's
// EXP16CONSTS; EXP16, EXPSHIFT16 and EXP16GO are there too) and compute
// every lane with the same instructions in the same order, so each
// exponential is bit-identical to the AVX2 kernel's.

// SIGMOID16 is Z5 = 1/(1 + e^(−Z1)) with the exponent clamped to
// [expMin, expMax] (Z15 the sign mask, Z28 expMax; clobbers Z1–Z4).
#define SIGMOID16 \
	VXORPS Z15, Z1, Z1; \
	VMAXPS Z16, Z1, Z1; \
	VMINPS Z28, Z1, Z1; \
	EXP16; \
	VADDPS Z27, Z4, Z4; \
	VDIVPS Z4, Z27, Z5

// func expShiftSumAVX512All(dst, src []float32, mx float32) float32
// expShiftSumAVX2 over the whole of src, 16 lanes at a time: the sum
// stays in an 8-lane accumulator that receives the low half of each
// 16-lane block and then the high half — the blocks of 8 in the order the
// AVX2 loop adds them — and is reduced as it reduces its own; a last
// block of 8 runs in the low half (a VEX load zeroes the upper lanes).
// The full blocks load and store without a mask: a masked store to a
// line not in cache ran 3–4× slower on the 2-core AVX-512 machine (AMD
// Zen 5). Then the last len(src) mod 8 terms in one masked block (EXP16GO: the terms
// of expShiftSumGo, which are not always the FMA blocks') summed one after another
// from +0 and added to the blocks' sum last, as expShiftSum adds the Go
// tail's sum: bit-identical to it. The tail's loads and stores are masked
// (its lines were just read or written: the slow masked store of a line
// not in cache does not arise here). Short rows (the attention softmax at
// short context) then make no scalar exponential at all.
TEXT ·expShiftSumAVX512All(SB), NOSPLIT, $0-60
	MOVQ dst_base+0(FP), DI
	MOVQ src_base+24(FP), SI
	MOVQ src_len+32(FP), DX
	MOVQ DX, R8
	SHRQ $3, DX
	MOVQ DX, CX
	SHRQ $1, CX
	VBROADCASTSS mx+48(FP), Z0
	EXP16CONSTS
	VXORPS Y13, Y13, Y13
	TESTQ CX, CX
	JZ all8

all16:
	VMOVUPS (SI), Z1
	EXPSHIFT16
	VMOVUPS Z4, (DI)
	VADDPS Y4, Y13, Y13
	VEXTRACTF32X8 $1, Z4, Y5
	VADDPS Y5, Y13, Y13
	ADDQ $64, SI
	ADDQ $64, DI
	DECQ CX
	JNZ all16

all8:
	TESTQ $1, DX
	JZ allred
	VMOVUPS (SI), Y1
	EXPSHIFT16
	VMOVUPS Y4, (DI)
	VADDPS Y4, Y13, Y13
	ADDQ $32, SI
	ADDQ $32, DI

allred:
	VEXTRACTF128 $1, Y13, X1
	VADDPS X1, X13, X13
	VHADDPS X13, X13, X13
	VHADDPS X13, X13, X13
	ANDQ $7, R8
	JZ alldone
	MOVQ R8, CX
	MOVL $1, AX
	SHLL CX, AX
	DECL AX
	KMOVW AX, K1
	VMOVUPS.Z (SI), K1, Z1
	VSUBPS Z0, Z1, Z1
	VMAXPS Z1, Z16, Z1
	EXP16GO
	VMOVUPS Z4, K1, (DI)
	VXORPS X6, X6, X6

alltail:
	// the terms from the register (a load would wait on the masked store)
	VADDSS X4, X6, X6
	VALIGND $1, Z4, Z4, Z4
	DECQ R8
	JNZ alltail
	VADDSS X6, X13, X13

alldone:
	VZEROUPPER
	MOVSS X13, ret+56(FP)
	RET

// func sigmoidAVX512(dst, src []float32)
// sigmoidAVX2 over len(src) rounded down to a multiple of 8, 16 lanes at
// a time (a last block of 8 in the low half): the same instructions per
// lane, so bit-identical to it. No masked stores (see expShiftSumAVX512All):
// dst is usually an activation buffer last written a whole pass ago, and
// with masked stores this loop ran at a third of the speed on such lines.
TEXT ·sigmoidAVX512(SB), NOSPLIT, $0-48
	MOVQ dst_base+0(FP), DI
	MOVQ src_base+24(FP), SI
	MOVQ src_len+32(FP), DX
	SHRQ $3, DX
	MOVQ DX, CX
	SHRQ $1, CX
	VBROADCASTSS expSign<>(SB), Z15
	EXP16CONSTS
	VBROADCASTSS expMax<>(SB), Z28
	TESTQ CX, CX
	JZ sig8

sig16:
	VMOVUPS (SI), Z1
	SIGMOID16
	VMOVUPS Z5, (DI)
	ADDQ $64, SI
	ADDQ $64, DI
	DECQ CX
	JNZ sig16

sig8:
	TESTQ $1, DX
	JZ sig16done
	VMOVUPS (SI), Y1
	SIGMOID16
	VMOVUPS Y5, (DI)

sig16done:
	VZEROUPPER
	RET
