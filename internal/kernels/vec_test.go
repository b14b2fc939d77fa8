package kernels

import (
	"math"
	"math/rand"
	"testing"
)

func randVec(r *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = r.Float32()*2 - 1
	}
	return v
}

var vecSizes = []int{0, 1, 2, 3, 7, 8, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 127, 128, 129, 1000, 4099}

func TestVectorPrimitives(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for _, n := range vecSizes {
		a, b := randVec(r, n), randVec(r, n+3) // b longer than a on purpose
		var want float64
		for i := 0; i < n; i++ {
			want += float64(a[i]) * float64(b[i])
		}
		for name, f := range map[string]func(a, b []float32) float32{"Dot": Dot, "dotGo": dotGo} {
			if got := f(a, b); math.Abs(float64(got)-want) > 1e-5*float64(n+1) {
				t.Errorf("%s n=%d: %v, want %v", name, n, got, want)
			}
		}

		y := randVec(r, n+2)
		y0 := append([]float32(nil), y...)
		Axpy(0.75, a, y)
		for i := range y {
			w := y0[i]
			if i < n {
				w += 0.75 * a[i]
			}
			if math.Abs(float64(y[i]-w)) > 1e-6 {
				t.Fatalf("Axpy n=%d i=%d: %v, want %v", n, i, y[i], w)
			}
		}

		x := append([]float32(nil), a...)
		Scale(-1.5, x)
		for i := range x {
			if x[i] != -1.5*a[i] {
				t.Fatalf("Scale n=%d i=%d: %v, want %v", n, i, x[i], -1.5*a[i])
			}
		}

		dst := make([]float32, n)
		Add(dst, a, b)
		for i := range dst {
			if dst[i] != a[i]+b[i] {
				t.Fatalf("Add n=%d i=%d: %v, want %v", n, i, dst[i], a[i]+b[i])
			}
		}
		Add(a, a, b) // aliasing
		for i := range dst {
			if a[i] != dst[i] {
				t.Fatalf("Add aliased n=%d i=%d: %v, want %v", n, i, a[i], dst[i])
			}
		}
	}
}
