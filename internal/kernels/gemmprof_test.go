package kernels

import (
	"fmt"
	"math/rand"
	"slices"
	"testing"
)

// TestGemmProfile: profiled, a GEMM's thread time splits into packing,
// the macro-kernel and the rest, each part inside the call's wall time ×
// threads; SgemmPair adds its two threads' time; unprofiled, nothing is
// added; and the results do not change.
func TestGemmProfile(t *testing.T) {
	defer SetThreads(Threads())
	defer SetGemmProfile(SetGemmProfile(false))
	const m, n, k = 300, 200, 700 // ragged tiles, two kc slices, op(A) packed (Aᵀ)
	r := rand.New(rand.NewSource(1))
	a, b := randSlice(r, k*m), randSlice(r, k*n)
	want := make([]float32, m*n)
	Sgemm(true, false, m, n, k, 1, a, m, b, n, 0, want, n)
	for _, threads := range []int{1, 2} {
		t.Run(fmt.Sprintf("threads=%d", threads), func(t *testing.T) {
			SetThreads(threads)
			c := make([]float32, m*n)
			before := ReadGemmProfile()
			Sgemm(true, false, m, n, k, 1, a, m, b, n, 0, c, n)
			if got := ReadGemmProfile(); got != before {
				t.Errorf("profiling off, the sums moved: %+v → %+v", before, got)
			}
			SetGemmProfile(true)
			before = ReadGemmProfile()
			Sgemm(true, false, m, n, k, 1, a, m, b, n, 0, c, n)
			p := ReadGemmProfile().Sub(before)
			SetGemmProfile(false)
			if !slices.Equal(c, want) {
				t.Error("profiled result differs")
			}
			// No ordering between the parts is asserted: on a loaded machine a
			// page fault or a preempted thread can make packing the longer one.
			if p.Pack <= 0 || p.Kernel <= 0 || p.Other() < 0 {
				t.Errorf("profile %+v (other %v)", p, p.Other())
			}
		})
	}
	SetThreads(2)
	x := GemmArgs{TransA: true, M: m, N: n, K: k, Alpha: 1, A: a, Lda: m, B: b, Ldb: n, C: make([]float32, m*n), Ldc: n}
	y := x
	y.C = make([]float32, m*n)
	SetGemmProfile(true)
	before := ReadGemmProfile()
	SgemmPair(x, y)
	p := ReadGemmProfile().Sub(before)
	SetGemmProfile(false)
	if !slices.Equal(x.C, want) || !slices.Equal(y.C, want) {
		t.Error("profiled pair differs")
	}
	if p.Pack <= 0 || p.Kernel <= 0 || p.Other() < 0 {
		t.Errorf("pair profile %+v (other %v)", p, p.Other())
	}
}
