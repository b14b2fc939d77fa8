package optim

import (
	"os"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/kestrel-lm/kestrel/internal/kernels"
)

// TestABTime (KESTREL_AB=1) times the one-stream and four-stream pass 1 in alternating pairs.
func TestABTime(t *testing.T) {
	if os.Getenv("KESTREL_AB") == "" {
		t.Skip("KESTREL_AB unset")
	}
	defer kernels.SetThreads(kernels.Threads())
	kernels.SetThreads(runtime.GOMAXPROCS(0))
	o, p, g := shakespeareOptim(t)
	k := adamConsts{gs: 1, b1: 0.9, c1: 0.1, b2: 0.95, c2: 0.05, ib1: 1.5, ib2: 1.2, eps: 1e-8, step: 1e-9}
	var a, b []float64
	for range 300 {
		useDir4 = false
		t0 := time.Now()
		o.dirPass(p, g, &k, adamDir, 1)
		t1 := time.Now()
		useDir4 = true
		o.dirPass(p, g, &k, adamDir, 1)
		t2 := time.Now()
		a, b = append(a, t1.Sub(t0).Seconds()*1e3), append(b, t2.Sub(t1).Seconds()*1e3)
	}
	slices.Sort(a)
	slices.Sort(b)
	t.Logf("threads %d: old median %.3f ms (p10 %.3f), new median %.3f ms (p10 %.3f), ratio %.2f", kernels.Threads(), a[150], a[30], b[150], b[30], a[150]/b[150])
}
