package ops

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/kernels"
)

// TestAttnTilesMatchSgemm checks every tile kernel against kernels.Sgemm
// (AVX-512) bit for bit: A read with row or column steps (as the tile path
// reads P and Pᵀ), beta 0 and 1, and attnFirst against beta = 1 over a C
// cleared to +0, with inputs whose products underflow to ±0.
func TestAttnTilesMatchSgemm(t *testing.T) {
	if !attnAVX512 || kernels.Impl() != "avx512" {
		t.Skip("needs AVX-512 and kernels' AVX-512 GEMM")
	}
	r := rand.New(rand.NewPCG(31, 1))
	gen := func(n int) []float32 {
		v := randVec(r, n, 1)
		for i := range v {
			if r.IntN(8) == 0 {
				v[i] *= 1e-25 // products of two of these underflow
			}
		}
		return v
	}
	for _, w := range []int{16, 32, 64} {
		for rows := 1; rows <= tileRowsMax(w); rows++ {
			for _, k := range []int{1, 2, 3, 64, 65} {
				for _, trans := range []bool{false, true} {
					name := fmt.Sprintf("%dx%d_k%d_trans%v", rows, w, k, trans)
					const lda, ldb, ldc = 70, 80, 90
					a, b := gen(max(rows, k)*lda), gen(k*ldb)
					c0 := gen(rows * ldc)
					rs, cs := lda, 1
					if trans {
						rs, cs = 1, lda
					}
					for _, beta := range []float32{0, 1} {
						got := append([]float32(nil), c0...)
						want := append([]float32(nil), c0...)
						attnTile(rows, w, k, a, rs, cs, b, ldb, got, ldc, 0.125, beta)
						kernels.Sgemm(trans, false, rows, w, k, 0.125, a, lda, b, ldb, beta, want, ldc)
						sameBitsAll(t, name, got, want)
					}
					got := append([]float32(nil), c0...)
					want := append([]float32(nil), c0...)
					for i := 0; i < rows; i++ {
						clear(want[i*ldc : i*ldc+w])
					}
					attnTile(rows, w, k, a, rs, cs, b, ldb, got, ldc, 0.125, attnFirst)
					kernels.Sgemm(trans, false, rows, w, k, 0.125, a, lda, b, ldb, 1, want, ldc)
					sameBitsAll(t, name+"_first", got, want)
				}
			}
		}
	}
	// a sum of −0 (an underflowing negative product): beta = 0 keeps −0,
	// attnFirst gives +0 as beta = 1 over +0 does
	a, b := []float32{-1e-30}, make([]float32, 16)
	b[0] = 1e-30
	c := make([]float32, 16)
	attnTile(1, 16, 1, a, 1, 1, b, 16, c, 16, 1, 0)
	if math.Float32bits(c[0]) != 0x80000000 {
		t.Fatalf("beta 0: %#x, want −0", math.Float32bits(c[0]))
	}
	attnTile(1, 16, 1, a, 1, 1, b, 16, c, 16, 1, attnFirst)
	if math.Float32bits(c[0]) != 0 {
		t.Fatalf("attnFirst: %#x, want +0", math.Float32bits(c[0]))
	}
}

func tileRowsMax(w int) int {
	if w == 64 {
		return 6
	}
	return 12
}

// TestAttnTransT checks the 8×8-block transpose against a loop.
func TestAttnTransT(t *testing.T) {
	for _, c := range []struct{ rows, n, lds, ldd int }{{8, 8, 8, 8}, {16, 64, 768, 272}, {256, 32, 100, 264}} {
		src := make([]float32, c.rows*c.lds)
		for i := range src {
			src[i] = float32(i)
		}
		dst := make([]float32, c.n*c.ldd)
		attnTransT(dst, c.ldd, src, c.lds, c.rows, c.n)
		for j := 0; j < c.rows; j++ {
			for d := 0; d < c.n; d++ {
				if dst[d*c.ldd+j] != src[j*c.lds+d] {
					t.Fatalf("%v: [%d,%d] = %g, want %g", c, d, j, dst[d*c.ldd+j], src[j*c.lds+d])
				}
			}
		}
	}
}

// TestDotRows8 checks attnDot8 against the Go sums bit for bit.
func TestDotRows8(t *testing.T) {
	r := rand.New(rand.NewPCG(32, 1))
	for _, n := range []int{1, 2, 7, 100, 256} {
		ld := n + 3
		p, d := randVec(r, 8*ld, 1), randVec(r, 8*ld, 1)
		var s [8]float32
		dotRows8(p, d, ld, n, &s)
		for i := range s {
			var want float32
			for j := 0; j < n; j++ {
				want += p[i*ld+j] * d[i*ld+j]
			}
			if math.Float32bits(s[i]) != math.Float32bits(want) {
				t.Fatalf("n=%d row %d: %g, want %g", n, i, s[i], want)
			}
		}
	}
}
