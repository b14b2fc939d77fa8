package ops

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/kernels"
)

func TestParsePrecision(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Precision
		bad  bool
	}{{"fp32", FP32, false}, {"", FP32, false}, {"bf16", BF16, false}, {"BF16", FP32, true}, {"fp16", FP32, true}} {
		got, err := ParsePrecision(tc.in)
		if (err != nil) != tc.bad || got != tc.want {
			t.Errorf("ParsePrecision(%q) = %v, %v; want %v, error %v", tc.in, got, err, tc.want, tc.bad)
		}
		if err == nil && tc.in != "" && got.String() != tc.in {
			t.Errorf("%v.String() = %q, want %q", got, got.String(), tc.in)
		}
	}
}

// TestPrecisionCheck: without bf16 hardware BF16 is refused naming the
// missing feature, unless the reference override is set; FP32 never is.
func TestPrecisionCheck(t *testing.T) {
	defer func(f func() (bool, string)) { bf16Hardware = f }(bf16Hardware)
	bf16Hardware = func() (bool, string) { return false, "avx512_bf16" }
	t.Setenv(BF16ReferenceEnv, "")
	if err := FP32.Check(); err != nil {
		t.Errorf("FP32 refused: %v", err)
	}
	err := BF16.Check()
	if err == nil || !strings.Contains(err.Error(), "avx512_bf16") {
		t.Errorf("BF16 without hardware: %v, want a refusal naming avx512_bf16", err)
	}
	t.Setenv(BF16ReferenceEnv, "1")
	if err := BF16.Check(); err != nil {
		t.Errorf("BF16 with %s=1: %v", BF16ReferenceEnv, err)
	}
	bf16Hardware = func() (bool, string) { return true, "" }
	t.Setenv(BF16ReferenceEnv, "")
	if err := BF16.Check(); err != nil {
		t.Errorf("BF16 with hardware: %v", err)
	}
}

// TestPrecisionMatmul: FP32 is the plain ops bit for bit; BF16 equals the
// float32 product of bf16-rounded operands (to float32 summation order),
// forward and both backward products, at odd sizes.
func TestPrecisionMatmul(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	fill := func(n int) []float32 {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(r.NormFloat64())
		}
		return x
	}
	round := func(x []float32) []float32 {
		y := make([]float32, len(x))
		kernels.RoundBF16Slice(y, x)
		return y
	}
	for _, sz := range [][3]int{{1, 1, 1}, {7, 13, 5}, {33, 65, 17}, {64, 96, 130}} {
		N, in, out := sz[0], sz[1], sz[2]
		x, w, dy := fill(N*in), fill(out*in), fill(N*out)
		near := func(name string, got, want []float32, tol float64) {
			t.Helper()
			for i := range got {
				if math.Abs(float64(got[i]-want[i])) > tol*(1+math.Abs(float64(want[i]))) {
					t.Fatalf("%v %s[%d]: %g, want %g", sz, name, i, got[i], want[i])
				}
			}
		}
		// FP32 bit for bit
		y1, y2 := make([]float32, N*out), make([]float32, N*out)
		MatmulForward(y1, x, w, N, in, out, false)
		FP32.MatmulForward(y2, x, w, N, in, out, false)
		near("fp32 y", y2, y1, 0)
		// BF16 forward = fp32 on rounded operands
		yb := make([]float32, N*out)
		BF16.MatmulForward(yb, x, w, N, in, out, false)
		MatmulForward(y1, round(x), round(w), N, in, out, false)
		near("bf16 y", yb, y1, 1e-5)
		// BF16 backward
		dx1, dw1 := make([]float32, N*in), make([]float32, out*in)
		dx2, dw2 := make([]float32, N*in), make([]float32, out*in)
		BF16.MatmulBackward(dx2, dw2, dy, x, w, N, in, out, false)
		MatmulBackward(dx1, dw1, round(dy), round(x), round(w), N, in, out, false)
		near("bf16 dx", dx2, dx1, 1e-5)
		near("bf16 dw", dw2, dw1, 1e-5)
		var diff bool
		MatmulForward(y1, x, w, N, in, out, false)
		for i := range y1 {
			diff = diff || y1[i] != yb[i]
		}
		if !diff && N*in > 1 {
			t.Errorf("%v: bf16 product equals the fp32 one", sz)
		}
	}
}

// TestBF16RoundingOverflowsOnlyAtTheTop holds the argument of the metric
// registry (monitor, loss_scale/overflow_rate) that BF16 needs no count of
// its own non-finite values: rounding to bf16 makes ±Inf out of a finite
// float32 only when |x| ≥ 0x7f7f8000 (3.3962e38, half a bf16 ulp above the
// largest bf16), checked for every float32 of the top binade (the only one
// where rounding can carry into the exponent's all-ones), and for a sample
// of the binades below; NaN stays NaN, ±Inf stay ±Inf.
func TestBF16RoundingOverflowsOnlyAtTheTop(t *testing.T) {
	const edge = 0x7f7f8000
	for u := uint32(0x7f000000); u < 0x7f800000; u++ {
		for _, sign := range []uint32{0, 1 << 31} {
			r := kernels.RoundBF16(math.Float32frombits(u | sign))
			if inf := math.IsInf(float64(r), 0); inf != (u >= edge) {
				t.Fatalf("RoundBF16(%#x) = %g: Inf %v, want %v", u|sign, r, inf, u >= edge)
			}
		}
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 1 << 16 {
		u := rng.Uint32() % 0x7f000000
		if r := kernels.RoundBF16(math.Float32frombits(u)); math.IsInf(float64(r), 0) || math.IsNaN(float64(r)) {
			t.Fatalf("RoundBF16(%#x) = %g", u, r)
		}
	}
	for _, x := range []float32{float32(math.Inf(1)), float32(math.Inf(-1))} {
		if r := kernels.RoundBF16(x); r != x {
			t.Errorf("RoundBF16(%g) = %g", x, r)
		}
	}
	if r := kernels.RoundBF16(float32(math.NaN())); !math.IsNaN(float64(r)) {
		t.Errorf("RoundBF16(NaN) = %g", r)
	}
}
