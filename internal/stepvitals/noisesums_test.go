package stepvitals

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/kernels"
)

// refSqCopy and refDot are the noise scale's one-thread passes as they
// were before the blocks went to the kernels' pool: a float64 total that
// each block's partial is added to in block order.
func refSqCopy(dst, src []float32) float64 {
	var total float64
	for i := 0; i < len(src); i += block {
		total += sqCopyBlock(dst[i:min(i+block, len(src))], src[i:min(i+block, len(src))])
	}
	return total
}

func refDot(a, b []float32) float64 {
	var total float64
	for i := 0; i < len(a); i += block {
		total += float64(kernels.Dot(a[i:min(i+block, len(a))], b[i:]))
	}
	return total
}

// TestNoiseSumsMatchOneThread holds the pool's block sums (sqCopy, dot)
// to the one-thread sums bit for bit, and the copy to the source, on 1, 2
// and 4 threads and at sizes around the block and the grain: fewer blocks
// than two grains (run inline), a ragged last block, a size not a
// multiple of 4, and shakespeare-char's gradient (885,888 values).
func TestNoiseSumsMatchOneThread(t *testing.T) {
	defer kernels.SetThreads(kernels.Threads())
	sizes := []int{1, 3, block - 1, block + 1, 2*blockGrain*block - 1, 2*blockGrain*block + 5, 885_888}
	r := rand.New(rand.NewPCG(7, 9))
	for _, threads := range []int{1, 2, 4} {
		kernels.SetThreads(threads)
		for _, n := range sizes {
			t.Run(fmt.Sprintf("threads=%d/n=%d", threads, n), func(t *testing.T) {
				src, other := make([]float32, n), make([]float32, n+3)
				for i := range src {
					src[i] = float32(r.NormFloat64()) * 1e-2
				}
				for i := range other {
					other[i] = float32(r.NormFloat64())
				}
				ns := NewNoiseScale()
				wantDot := refDot(src, other)
				if got := ns.dot(src, other); math.Float64bits(got) != math.Float64bits(wantDot) {
					t.Errorf("dot = %v, one thread %v", got, wantDot)
				}
				refDst, dst := make([]float32, n), make([]float32, n)
				want := refSqCopy(refDst, src)
				if got := ns.sqCopy(dst, src); math.Float64bits(got) != math.Float64bits(want) {
					t.Errorf("sqCopy = %v, one thread %v", got, want)
				}
				for i := range src {
					if dst[i] != src[i] {
						t.Fatalf("sqCopy: dst[%d] = %v, src %v", i, dst[i], src[i])
					}
				}
				if ns.sums.src != nil || ns.sums.dst != nil {
					t.Errorf("blockSums keeps a gradient after its pass")
				}
			})
		}
	}
}

// TestNoiseSumsNoAllocs: after the first step, a step's passes allocate
// nothing (the block partials are reused).
func TestNoiseSumsNoAllocs(t *testing.T) {
	grads := make([]float32, 300_001)
	for i := range grads {
		grads[i] = float32(i%89) * 1e-4
	}
	ns := NewNoiseScale()
	step := func() {
		ns.Begin()
		ns.Micro(grads, 0, 6, 0.5, false)
		ns.Micro(grads, 1, 6, 0.5, true)
	}
	step()
	if a := testing.AllocsPerRun(20, step); a != 0 {
		t.Errorf("a step of the noise scale allocates %v times; want 0", a)
	}
}
