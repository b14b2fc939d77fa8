package kernels

import (
	"math"
	"math/rand"
	"os"
	"strings"
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

// vecImpls lists the implementations of the primitives: the pure-Go twins
// and whatever init selected (assembly where supported).
func vecImpls() map[string][4]any {
	return map[string][4]any{
		"go":       {dotGo, axpyGo, scaleGo, addGo},
		"selected": {dotImpl, axpyImpl, scaleImpl, addImpl},
	}
}

func TestVectorPrimitives(t *testing.T) {
	saved := [4]any{dotImpl, axpyImpl, scaleImpl, addImpl}
	defer func() {
		dotImpl, axpyImpl = saved[0].(func(a, b []float32) float32), saved[1].(func(float32, []float32, []float32))
		scaleImpl, addImpl = saved[2].(func(float32, []float32)), saved[3].(func(dst, a, b []float32))
	}()
	for name, impl := range vecImpls() {
		dotImpl, axpyImpl = impl[0].(func(a, b []float32) float32), impl[1].(func(float32, []float32, []float32))
		scaleImpl, addImpl = impl[2].(func(float32, []float32)), impl[3].(func(dst, a, b []float32))
		t.Run(name, testVectorPrimitives)
	}
}

func testVectorPrimitives(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for _, n := range vecSizes {
		a, b := randVec(r, n), randVec(r, n+3) // b longer than a on purpose
		var want float64
		for i := 0; i < n; i++ {
			want += float64(a[i]) * float64(b[i])
		}
		if got := Dot(a, b); math.Abs(float64(got)-want) > 1e-6*float64(n+1) {
			t.Errorf("Dot n=%d: %v, want %v", n, got, want)
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

// TestAssemblyEndsWithVzeroupper guards the trap of DESIGN.md §2: every
// assembly routine that touches Y/Z registers must execute VZEROUPPER before
// each RET, or later scalar float code runs many times slower.
func TestAssemblyEndsWithVzeroupper(t *testing.T) {
	src, err := os.ReadFile("gemm_amd64.s")
	if err != nil {
		t.Fatal(err)
	}
	name, prev, rets := "", "", 0
	for i, line := range strings.Split(string(src), "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "TEXT ") {
			name = line
		}
		if line == "RET" {
			rets++
			if prev != "VZEROUPPER" && !strings.HasPrefix(prev, "MOVSS") {
				t.Errorf("gemm_amd64.s:%d: RET in %q not preceded by VZEROUPPER", i+1, name)
			}
		}
		if line != "" {
			prev = line
		}
	}
	if rets < 6 {
		t.Fatalf("only %d RETs found in gemm_amd64.s", rets)
	}
}

func BenchmarkVector(b *testing.B) {
	x, y := make([]float32, 768), make([]float32, 768)
	for name, impl := range vecImpls() {
		dot := impl[0].(func(a, b []float32) float32)
		axpy := impl[1].(func(float32, []float32, []float32))
		b.Run("dot768/"+name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				peakSink += dot(x, y)
			}
		})
		b.Run("axpy768/"+name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				axpy(0.5, x, y)
			}
		})
	}
}
