package kernels

import (
	"math"
	"math/rand"
	"testing"
)

// TestPackATRowsBF16MatchesGo: the AVX-512 packing of op(A) = Aᵀ into rows
// of bf16 pairs (the AMX kernel's A layout) writes bit for bit what the Go
// loop writes, padding included, for ragged rows (mc not a multiple of 16),
// odd and ragged depths (kc not a multiple of 32), offsets into A and row
// strides of A that are not multiples of 16, with values that round up,
// down and to even (ties), infinities and signed zeros; and the assembly
// did the whole blocks (rows, pairs) it should.
func TestPackATRowsBF16MatchesGo(t *testing.T) {
	if !hasAVX512BF16() {
		t.Skip("no AVX512_BF16")
	}
	kn := *kernelBF16AMX // the AMX kernel's packing; AVX512_BF16 is all it needs
	kn.packATRows = packATRowsBF16AVX512
	goOnly := kn
	goOnly.packATRows, goOnly.cvtRow = nil, nil
	r := rand.New(rand.NewSource(5))
	special := []float32{0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)),
		math.Float32frombits(0x3f808000), math.Float32frombits(0x3f818000), math.Float32frombits(0xbf80c000), 65504, -3.4e38}
	for _, tc := range []struct{ lda, i0, p0, mc, kc int }{
		{16, 0, 0, 16, 32}, {70, 1, 2, 67, 1024}, {300, 7, 3, 256, 1024}, {33, 0, 0, 17, 33},
		{40, 2, 1, 15, 200}, {135, 5, 0, 128, 63}, {64, 0, 5, 48, 64}, {20, 3, 0, 16, 31},
		{97, 0, 1, 1, 77}, {50, 1, 1, 33, 1}, {260, 4, 0, 255, 95},
	} {
		a := randVec(r, (tc.p0+tc.kc)*tc.lda)
		for i := range a {
			if r.Intn(8) == 0 {
				a[i] = special[r.Intn(len(special))]
			}
		}
		kd := kn.kdepth(tc.kc)
		ld := packedARows(kd)
		n := packASize(tc.mc, kd, kn.mr)
		got, want := make([]float32, n), make([]float32, n)
		rs1, cs1, ss1 := packABF16(&kn, true, a, tc.lda, tc.i0, tc.p0, tc.mc, tc.kc, got)
		rs2, cs2, ss2 := packABF16(&goOnly, true, a, tc.lda, tc.i0, tc.p0, tc.mc, tc.kc, want)
		if rs1 != ld || rs1 != rs2 || cs1 != cs2 || ss1 != ss2 {
			t.Fatalf("%+v: layout (%d,%d,%d), Go (%d,%d,%d), want row stride %d", tc, rs1, cs1, ss1, rs2, cs2, ss2, ld)
		}
		for i := range got {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("%+v: word %d (row %d, pair %d) is %#08x, Go %#08x", tc, i, i/ld, i%ld, math.Float32bits(got[i]), math.Float32bits(want[i]))
			}
		}
		rows, pairs := packATRowsBF16AVX512(got, a, tc.lda, tc.i0, tc.p0, tc.mc, tc.kc, ld)
		wr, wp := tc.mc/16*16, tc.kc/32*16
		if wr == 0 || wp == 0 {
			wr, wp = 0, 0
		}
		if rows != wr || pairs != wp {
			t.Errorf("%+v: the assembly did %d rows × %d pairs, want %d × %d", tc, rows, pairs, wr, wp)
		}
	}
}
