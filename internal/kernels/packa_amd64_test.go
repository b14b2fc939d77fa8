package kernels

import (
	"math/rand"
	"testing"
)

// TestPackAT14MatchesGo: the AVX-512 packing of op(A) = Aᵀ lays out every
// strip exactly as the Go loop does (full and ragged strips, depths 1 to
// over a kc, offsets into A).
func TestPackAT14MatchesGo(t *testing.T) {
	if !hasAVX512() {
		t.Skip("no AVX-512")
	}
	goOnly := *kernelAVX512
	goOnly.packAT = nil
	r := rand.New(rand.NewSource(3))
	for _, tc := range []struct{ lda, i0, p0, mc, kc int }{
		{14, 0, 0, 14, 1}, {100, 3, 2, 42, 7}, {8192, 168, 512, 168, 512}, {700, 5, 1, 61, 33}, {29, 1, 0, 27, 600},
	} {
		a := make([]float32, (tc.p0+tc.kc)*tc.lda)
		for i := range a {
			a[i] = r.Float32()
		}
		n := packASize(tc.mc, tc.kc, 14)
		got, want := make([]float32, n), make([]float32, n)
		rs, cs, ss := packA(kernelAVX512, true, a, tc.lda, tc.i0, tc.p0, tc.mc, tc.kc, got)
		rs1, cs1, ss1 := packA(&goOnly, true, a, tc.lda, tc.i0, tc.p0, tc.mc, tc.kc, want)
		if rs != rs1 || cs != cs1 || ss != ss1 {
			t.Fatalf("%+v: layout (%d,%d,%d), Go (%d,%d,%d)", tc, rs, cs, ss, rs1, cs1, ss1)
		}
		strips := (tc.mc + 13) / 14
		for s := 0; s < strips; s++ {
			for p := 0; p < tc.kc; p++ {
				for i := 0; i < 14; i++ {
					o := s*ss + p*cs + i*rs
					if got[o] != want[o] {
						t.Fatalf("%+v: strip %d depth %d row %d: %v, Go %v", tc, s, p, i, got[o], want[o])
					}
				}
			}
		}
	}
}
