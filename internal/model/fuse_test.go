package model

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/kernels"
	"github.com/kestrel-lm/kestrel/internal/kernels/ops"
)

// TestRMSForwardCopyMatchesUnfused: the norm pass that also copies the
// residual rows (rmsForwardCopy) writes the normalised rows and rstd of
// ops.RMSNormForward bit for bit and an exact copy of its input, on odd
// row counts and widths, 1 and 2 threads.
func TestRMSForwardCopyMatchesUnfused(t *testing.T) {
	saved := kernels.Threads()
	t.Cleanup(func() { kernels.SetThreads(saved) })
	m := &Model{}
	r := rand.New(rand.NewPCG(5, 1))
	for _, c := range []struct{ N, C int }{{1, 8}, {7, 128}, {33, 20}, {384, 128}, {385, 96}} {
		for _, threads := range []int{1, 2} {
			kernels.SetThreads(threads)
			inp, w := make([]float32, c.N*c.C), make([]float32, c.C)
			for i := range inp {
				inp[i] = float32(r.NormFloat64())
			}
			for i := range w {
				w[i] = float32(1 + 0.1*r.NormFloat64())
			}
			out, rstd, cp := make([]float32, c.N*c.C), make([]float32, c.N), make([]float32, c.N*c.C+3)
			cp[len(cp)-1] = 9
			m.rmsForwardCopy(out, rstd, inp, w, cp, c.N, c.C, 1e-5)
			wantOut, wantRstd := make([]float32, c.N*c.C), make([]float32, c.N)
			ops.RMSNormForward(wantOut, wantRstd, inp, w, c.C, 1e-5, 0, c.N)
			name := fmt.Sprintf("N%d_C%d_threads%d", c.N, c.C, threads)
			for i := range wantOut {
				if math.Float32bits(out[i]) != math.Float32bits(wantOut[i]) || cp[i] != inp[i] {
					t.Fatalf("%s: [%d] out %v cp %v, want %v and %v", name, i, out[i], cp[i], wantOut[i], inp[i])
				}
			}
			for i := range wantRstd {
				if math.Float32bits(rstd[i]) != math.Float32bits(wantRstd[i]) {
					t.Fatalf("%s: rstd[%d] %v, want %v", name, i, rstd[i], wantRstd[i])
				}
			}
			if cp[len(cp)-1] != 9 {
				t.Fatalf("%s: wrote past the copy's rows", name)
			}
		}
	}
}
