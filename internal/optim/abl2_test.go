package optim

import (
	"os"
	"slices"
	"testing"
	"time"
)

func TestABL2(t *testing.T) {
	if os.Getenv("KESTREL_AB") == "" {
		t.Skip("KESTREL_AB unset")
	}
	for _, n := range []int{4 * chunkSize, 54 * chunkSize, 0} {
		spans := []Span{{"a", 0, n / 2, "matrix", nil}, {"b", n / 2, n / 2, "matrix", nil}}
		o, _ := NewAdamW(DefaultConfig(), n, spans)
		p, g := seeded(n, 1, 0.02), seeded(n, 2, 1e-3)
		if n == 0 {
			o, p, g = shakespeareOptim(t)
			n = len(p)
		}
		o.Step(p, g, 1, 1e-4)
		k := adamConsts{gs: 1, b1: 0.9, c1: 0.1, b2: 0.95, c2: 0.05, ib1: 1.5, ib2: 1.2, eps: 1e-8, step: 1e-9}
		res := map[string][]float64{}
		for range 100 {
			for _, v := range []struct {
				name string
				fn   func()
			}{
				{"gradnorm", func() { o.gradNormPass(g) }},
				{"dir", func() { o.dirPass(p, g, &k, adamDir, 1, false) }},
				{"dirstore", func() { o.dirPass(p, g, &k, adamDir, 1, o.storing(n, &k)) }},
				{"commit", func() { o.commitPass(p, g, &k, adamCommit, 1) }},
				{"theta", func() { thetaUpdate(p, o.u, 1e-9) }},
			} {
				t0 := time.Now()
				v.fn()
				res[v.name] = append(res[v.name], float64(time.Since(t0).Nanoseconds())/float64(n))
			}
		}
		for _, k := range []string{"gradnorm", "dir", "dirstore", "commit", "theta"} {
			x := res[k]
			slices.Sort(x)
			t.Logf("n %8d %-10s p10 %.3f ns/elem median %.3f", n, k, x[10], x[50])
		}
	}
}
