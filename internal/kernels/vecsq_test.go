package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestSquaresAdd: SquaresAdd's two norms are Dot's bits and its sum is
// Add's, on this CPU's path and on the Go one, for every length up to 80
// (the AVX2 loop's 32- and 8-float steps and the scalar tail), a block of
// internal/replicas' Fold and odd offsets into the buffers.
func TestSquaresAdd(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	lens := []int{16384, 16383, 1000, 4099}
	for n := 0; n <= 80; n++ {
		lens = append(lens, n)
	}
	for _, impl := range []struct {
		name string
		f    func(dst, x []float32) (float32, float32)
	}{{"SquaresAdd", SquaresAdd}, {"sqAddGo", sqAddGo}} {
		for _, n := range lens {
			for _, off := range []int{0, 3} {
				d, x := make([]float32, n+off), make([]float32, n+off)
				for i := range d {
					d[i], x[i] = float32(r.NormFloat64())*1e-3, float32(r.NormFloat64())*3
				}
				d, x = d[off:], x[off:]
				wantD, wantX := Dot(d, d), Dot(x, x)
				want := make([]float32, n)
				Add(want, d, x)
				dd, xx := impl.f(d, x)
				if math.Float32bits(dd) != math.Float32bits(wantD) || math.Float32bits(xx) != math.Float32bits(wantX) {
					t.Fatalf("%s n=%d off=%d: norms %v %v, Dot's %v %v", impl.name, n, off, dd, xx, wantD, wantX)
				}
				for i := range want {
					if math.Float32bits(d[i]) != math.Float32bits(want[i]) {
						t.Fatalf("%s n=%d off=%d: dst[%d] = %v, Add's %v", impl.name, n, off, i, d[i], want[i])
					}
				}
			}
		}
	}
}
