#include "textflag.h"

// The constants of math.Log's amd64 assembly (GOROOT/src/math/log_amd64.s).
DATA logHSqrt2<>+0(SB)/8, $0x3fe6a09e667f3bcd
GLOBL logHSqrt2<>(SB), RODATA|NOPTR, $8
DATA logLn2Hi<>+0(SB)/8, $0x3fe62e42fee00000
GLOBL logLn2Hi<>(SB), RODATA|NOPTR, $8
DATA logLn2Lo<>+0(SB)/8, $0x3dea39ef35793c76
GLOBL logLn2Lo<>(SB), RODATA|NOPTR, $8
DATA logL1<>+0(SB)/8, $0x3FE5555555555593
GLOBL logL1<>(SB), RODATA|NOPTR, $8
DATA logL2<>+0(SB)/8, $0x3FD999999997FA04
GLOBL logL2<>(SB), RODATA|NOPTR, $8
DATA logL3<>+0(SB)/8, $0x3FD2492494229359
GLOBL logL3<>(SB), RODATA|NOPTR, $8
DATA logL4<>+0(SB)/8, $0x3FCC71C51D8E78AF
GLOBL logL4<>(SB), RODATA|NOPTR, $8
DATA logL5<>+0(SB)/8, $0x3FC7466496CB03DE
GLOBL logL5<>(SB), RODATA|NOPTR, $8
DATA logL6<>+0(SB)/8, $0x3FC39A09D078C69F
GLOBL logL6<>(SB), RODATA|NOPTR, $8
DATA logL7<>+0(SB)/8, $0x3FC2F112DF3E5244
GLOBL logL7<>(SB), RODATA|NOPTR, $8
DATA logMant<>+0(SB)/8, $0x000FFFFFFFFFFFFF
GLOBL logMant<>(SB), RODATA|NOPTR, $8
DATA logHalf<>+0(SB)/8, $0x3FE0000000000000
GLOBL logHalf<>(SB), RODATA|NOPTR, $8
DATA logOne<>+0(SB)/8, $0x3FF0000000000000
GLOBL logOne<>(SB), RODATA|NOPTR, $8
DATA logTwo<>+0(SB)/8, $0x4000000000000000
GLOBL logTwo<>(SB), RODATA|NOPTR, $8
DATA logExpMask<>+0(SB)/8, $0x7FF
GLOBL logExpMask<>(SB), RODATA|NOPTR, $8
DATA logBias<>+0(SB)/8, $0x3FE
GLOBL logBias<>(SB), RODATA|NOPTR, $8

// func log8AVX512(x, out *[8]float64)
// math.Log's amd64 assembly (archLog) on 8 lanes: for finite x > 0 the
// same IEEE operations in the same order (no fused multiply-add), so
// out[i] is bit-identical to math.Log(x[i]). Zeros, negative values,
// infinities and NaNs are not handled (the caller takes math.Log there).
TEXT ·log8AVX512(SB), NOSPLIT, $0-16
	MOVQ x+0(FP), SI
	MOVQ out+8(FP), DI
	VMOVUPD (SI), Z0
	// f1, ki := Frexp(x) (the bits of archLog); k := float64(ki)
	VPANDQ.BCST logMant<>(SB), Z0, Z2
	VPORQ.BCST logHalf<>(SB), Z2, Z2
	VPSRLQ $52, Z0, Z1
	VPANDQ.BCST logExpMask<>(SB), Z1, Z1
	VPSUBQ.BCST logBias<>(SB), Z1, Z1
	VCVTQQ2PD Z1, Z1
	// if !(HSqrt2 < f1) { k -= 1; f1 *= 2 } as archLog's cmpnlt
	VBROADCASTSD logHSqrt2<>(SB), Z0
	VCMPPD $5, Z2, Z0, K1
	VBROADCASTSD logOne<>(SB), Z9
	VMOVAPD.Z Z9, K1, Z3
	VSUBPD Z3, Z1, Z1
	VADDPD Z9, Z3, Z3
	VMULPD Z3, Z2, Z2
	// f := f1 - 1
	VSUBPD Z9, Z2, Z2
	// s := f / (2 + f)
	VBROADCASTSD logTwo<>(SB), Z0
	VADDPD Z2, Z0, Z0
	VDIVPD Z0, Z2, Z3
	// s2, s4
	VMULPD Z3, Z3, Z4
	VMULPD Z4, Z4, Z5
	// t1 := s2 * (L1 + s4*(L3+s4*(L5+s4*L7)))
	VBROADCASTSD logL7<>(SB), Z6
	VMULPD Z5, Z6, Z6
	VADDPD.BCST logL5<>(SB), Z6, Z6
	VMULPD Z5, Z6, Z6
	VADDPD.BCST logL3<>(SB), Z6, Z6
	VMULPD Z5, Z6, Z6
	VADDPD.BCST logL1<>(SB), Z6, Z6
	VMULPD Z6, Z4, Z4
	// t2 := s4 * (L2 + s4*(L4+s4*L6))
	VBROADCASTSD logL6<>(SB), Z6
	VMULPD Z5, Z6, Z6
	VADDPD.BCST logL4<>(SB), Z6, Z6
	VMULPD Z5, Z6, Z6
	VADDPD.BCST logL2<>(SB), Z6, Z6
	VMULPD Z6, Z5, Z5
	// R := t1 + t2
	VADDPD Z5, Z4, Z4
	// hfsq := 0.5 * f * f
	VBROADCASTSD logHalf<>(SB), Z0
	VMULPD Z2, Z0, Z0
	VMULPD Z2, Z0, Z0
	// k*Ln2Hi - ((hfsq - (s*(hfsq+R) + k*Ln2Lo)) - f)
	VADDPD Z0, Z4, Z4
	VMULPD Z4, Z3, Z3
	VBROADCASTSD logLn2Lo<>(SB), Z4
	VMULPD Z1, Z4, Z4
	VADDPD Z4, Z3, Z3
	VSUBPD Z3, Z0, Z0
	VSUBPD Z2, Z0, Z0
	VMULPD.BCST logLn2Hi<>(SB), Z1, Z1
	VSUBPD Z0, Z1, Z1
	VMOVUPD Z1, (DI)
	VZEROUPPER
	RET
