// The AVX-512 exponential shared by expsum_amd64.s and the generated
// softmax_amd64.s (each .s file gets its own macros, so both include
// this). The including file defines the constants expMin, expLog2e,
// expMagic, expLn2hi, expLn2lo, expC7 … expC2 and expOne (<> symbols of
// at least 4 bytes; EXP16CONSTS broadcasts the first 4 of each).

// EXP16CONSTS broadcasts the exponential's constants into Z16–Z27 (the
// first 4 bytes of each constant).
#define EXP16CONSTS \
	VBROADCASTSS expMin<>(SB), Z16; \
	VBROADCASTSS expLog2e<>(SB), Z17; \
	VBROADCASTSS expMagic<>(SB), Z18; \
	VBROADCASTSS expLn2hi<>(SB), Z19; \
	VBROADCASTSS expLn2lo<>(SB), Z20; \
	VBROADCASTSS expC7<>(SB), Z21; \
	VBROADCASTSS expC6<>(SB), Z22; \
	VBROADCASTSS expC5<>(SB), Z23; \
	VBROADCASTSS expC4<>(SB), Z24; \
	VBROADCASTSS expC3<>(SB), Z25; \
	VBROADCASTSS expC2<>(SB), Z26; \
	VBROADCASTSS expOne<>(SB), Z27

// EXP16 computes Z4 = e^Z1 for Z1 already clamped, 16 lanes, with the
// AVX2 loops' instructions in their order (clobbers Z1–Z3): x = k·ln2 + r,
// e^r by the degree-7 polynomial, 2^k through the exponent bits.
#define EXP16 \
	VMOVAPS Z17, Z2; \
	VFMADD213PS Z18, Z1, Z2; \
	VSUBPS Z18, Z2, Z3; \
	VFNMADD231PS Z19, Z3, Z1; \
	VFNMADD231PS Z20, Z3, Z1; \
	VMOVAPS Z21, Z4; \
	VFMADD213PS Z22, Z1, Z4; \
	VFMADD213PS Z23, Z1, Z4; \
	VFMADD213PS Z24, Z1, Z4; \
	VFMADD213PS Z25, Z1, Z4; \
	VFMADD213PS Z26, Z1, Z4; \
	VFMADD213PS Z27, Z1, Z4; \
	VFMADD213PS Z27, Z1, Z4; \
	VPSLLD $23, Z2, Z2; \
	VPADDD Z27, Z2, Z2; \
	VMULPS Z2, Z4, Z4

// EXPSHIFT16 is Z4 = e^(max(Z1 − Z0, expMin)) (Z0 the row maximum),
// the terms of expShiftSumAVX512All's blocks (clobbers Z1–Z3).
#define EXPSHIFT16 \
	VSUBPS Z0, Z1, Z1; \
	VMAXPS Z16, Z1, Z1; \
	EXP16

// EXP16GO is EXP16 as expShiftSumGo computes it: every product and sum
// rounded on its own (no fused multiply-add; the Go compiler fuses none
// for GOAMD64=v1), in the Go expression's order (clobbers Z1–Z3, Z5).
// Its clamp before it takes max(d, expMin) with a NaN d kept, as Go's max.
#define EXP16GO \
	VMULPS Z17, Z1, Z2; \
	VADDPS Z18, Z2, Z2; \
	VSUBPS Z18, Z2, Z3; \
	VMULPS Z19, Z3, Z5; \
	VSUBPS Z5, Z1, Z1; \
	VMULPS Z20, Z3, Z5; \
	VSUBPS Z5, Z1, Z1; \
	VMULPS Z21, Z1, Z4; \
	VADDPS Z22, Z4, Z4; \
	VMULPS Z1, Z4, Z4; \
	VADDPS Z23, Z4, Z4; \
	VMULPS Z1, Z4, Z4; \
	VADDPS Z24, Z4, Z4; \
	VMULPS Z1, Z4, Z4; \
	VADDPS Z25, Z4, Z4; \
	VMULPS Z1, Z4, Z4; \
	VADDPS Z26, Z4, Z4; \
	VMULPS Z1, Z4, Z4; \
	VADDPS Z27, Z4, Z4; \
	VMULPS Z1, Z4, Z4; \
	VADDPS Z27, Z4, Z4; \
	VPSLLD $23, Z2, Z2; \
	VPADDD Z27, Z2, Z2; \
	VMULPS Z2, Z4, Z4
