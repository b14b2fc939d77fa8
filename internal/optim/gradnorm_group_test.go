package optim

import (
	"math"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/kernels"
)

// TestGradNormGroupsBitIdentical checks the gradient norm of Step, whose
// chunks are summed eight side by side (padded groups of fewer), against
// the definition: each chunk's squares added in element order over its
// segments, the chunk sums added in chunk order — for layouts of 1 to 19
// chunks, a partial last chunk, a gap outside every span, on 1 to 3
// threads.
func TestGradNormGroupsBitIdentical(t *testing.T) {
	defer kernels.SetThreads(kernels.Threads())
	for _, n := range []int{100, chunkSize + 3, 6*chunkSize + 1152, 9 * chunkSize, 19*chunkSize + 77} {
		spans := []Span{{"a", 0, n / 3, "matrix", nil}, {"b", n/3 + 5, n - n/3 - 5, "norm", nil}}
		g := seeded(n, 3, 1e-2)
		var want float64
		for c := 0; c*chunkSize < n; c++ {
			var s float64
			for j := c * chunkSize; j < min(n, (c+1)*chunkSize); j++ {
				if j < n/3 || j >= n/3+5 {
					s += float64(g[j]) * float64(g[j])
				}
			}
			want += s
		}
		want = math.Sqrt(want)
		for _, th := range []int{1, 2, 3} {
			kernels.SetThreads(th)
			o, err := NewAdamW(DefaultConfig(), n, spans)
			if err != nil {
				t.Fatal(err)
			}
			r, err := o.Step(seeded(n, 4, 0.02), g, 1, 1e-3)
			if err != nil {
				t.Fatal(err)
			}
			if math.Float64bits(r.GradNorm) != math.Float64bits(want) {
				t.Errorf("n %d, %d threads: grad norm %v, want %v", n, th, r.GradNorm, want)
			}
		}
	}
}
