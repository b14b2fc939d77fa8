package kernels

import (
	"math"
	"math/rand"
	"testing"
)

func TestBF16Bits(t *testing.T) {
	inf := float32(math.Inf(1))
	for _, c := range []struct {
		name string
		in   float32
		want uint16
	}{
		{"one", 1, 0x3f80},
		{"exact", 1.5, 0x3fc0},
		{"below half rounds down", math.Float32frombits(0x3f807fff), 0x3f80},
		{"tie to even stays", math.Float32frombits(0x3f808000), 0x3f80},
		{"tie to even goes up", math.Float32frombits(0x3f818000), 0x3f82},
		{"above half rounds up", math.Float32frombits(0x3f808001), 0x3f81},
		{"negative", -2, 0xc000},
		{"zero", 0, 0},
		{"negative zero", float32(math.Copysign(0, -1)), 0x8000},
		{"inf", inf, 0x7f80},
		{"-inf", -inf, 0xff80},
		{"overflow to inf", math.MaxFloat32, 0x7f80},
		{"subnormal", math.Float32frombits(0x00010000), 0x0001},
	} {
		if got := BF16Bits(c.in); got != c.want {
			t.Errorf("%s: BF16Bits(%g) = %#04x, want %#04x", c.name, c.in, got, c.want)
		}
	}
	for _, bits := range []uint32{0x7fc00000, 0x7f800001, 0xffffffff, 0x7f80ffff} {
		x := math.Float32frombits(bits)
		if y := RoundBF16(x); !math.IsNaN(float64(y)) {
			t.Errorf("RoundBF16(NaN %#08x) = %g, want a NaN", bits, y)
		}
	}
}

// TestSgemmBF16 checks the bf16 product against float64 sums of the rounded
// operands, in every transpose layout, with strides and beta.
func TestSgemmBF16(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for _, sz := range [][3]int{{1, 1, 1}, {3, 5, 7}, {17, 33, 65}, {64, 96, 300}} {
		m, n, k := sz[0], sz[1], sz[2]
		for _, tr := range [][2]bool{{false, false}, {false, true}, {true, false}, {true, true}} {
			ta, tb := tr[0], tr[1]
			ar, ac := m, k
			if ta {
				ar, ac = k, m
			}
			br, bc := k, n
			if tb {
				br, bc = n, k
			}
			lda, ldb, ldc := ac+3, bc+1, n+2
			a := randSlice(r, (ar-1)*lda+ac)
			b := randSlice(r, (br-1)*ldb+bc)
			c := randSlice(r, (m-1)*ldc+n)
			a0, b0, c0 := append([]float32(nil), a...), append([]float32(nil), b...), append([]float32(nil), c...)
			SgemmBF16(ta, tb, m, n, k, 0.5, a, lda, b, ldb, 2, c, ldc)
			if !equalF32(a, a0) || !equalF32(b, b0) {
				t.Fatalf("%v: SgemmBF16 modified its operands", sz)
			}
			at := func(x []float32, tr bool, ld, i, j int) float64 {
				if tr {
					i, j = j, i
				}
				return float64(RoundBF16(x[i*ld+j]))
			}
			for i := range m {
				for j := range n {
					var s float64
					for p := range k {
						s += at(a, ta, lda, i, p) * at(b, tb, ldb, p, j)
					}
					want := 0.5*s + 2*float64(c0[i*ldc+j])
					if got := float64(c[i*ldc+j]); math.Abs(got-want) > 1e-5*float64(k)+1e-5*math.Abs(want) {
						t.Fatalf("%v trans %v: C[%d,%d] = %g, want %g", sz, tr, i, j, got, want)
					}
				}
			}
		}
	}
}

func equalF32(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return false
		}
	}
	return true
}
