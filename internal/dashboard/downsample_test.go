package dashboard

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestDownsamplePreservesBucketExtremes(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for _, tc := range []struct{ n, maxPoints int }{
		{1, 10}, {10, 10}, {11, 10}, {1000, 7}, {100000, 800}, {5000, 1}, {3, 2},
	} {
		x := make([]float64, tc.n)
		y := make([]float32, tc.n)
		gx := 0.0
		for i := range x {
			gx += 1 + float64(rng.IntN(3)) // uneven spacing
			x[i] = gx
			y[i] = float32(rng.NormFloat64())
			if rng.IntN(50) == 0 {
				y[i] = float32(math.NaN()) // missing
			}
		}
		spike := tc.n / 3
		y[spike] = 1000 // a single-point spike must survive
		e := Downsample(x, y, tc.maxPoints)
		if len(e.X) > max(tc.maxPoints, 1) && e.Down {
			t.Fatalf("n=%d: %d buckets > max %d", tc.n, len(e.X), tc.maxPoints)
		}
		// Recompute each bucket's raw members from the bucket starts and
		// check the envelope holds exactly their min and max.
		k := -1
		lo, hi := math.Inf(1), math.Inf(-1)
		check := func() {
			if k < 0 {
				return
			}
			if e.Lo[k] != lo || e.Hi[k] != hi {
				t.Fatalf("n=%d max=%d bucket %d: envelope [%v,%v], raw [%v,%v]", tc.n, tc.maxPoints, k, e.Lo[k], e.Hi[k], lo, hi)
			}
		}
		seen := 0
		for i := range x {
			if math.IsNaN(float64(y[i])) {
				continue
			}
			seen++
			if k+1 < len(e.X) && x[i] >= e.X[k+1] {
				check()
				k++
				lo, hi = math.Inf(1), math.Inf(-1)
			} else if k < 0 {
				k = 0
			}
			lo = math.Min(lo, float64(y[i]))
			hi = math.Max(hi, float64(y[i]))
		}
		check()
		if e.N != seen {
			t.Fatalf("n=%d: N=%d, want %d", tc.n, e.N, seen)
		}
		gotMax := math.Inf(-1)
		for _, v := range e.Hi {
			gotMax = math.Max(gotMax, v)
		}
		if gotMax != 1000 {
			t.Fatalf("n=%d max=%d: the spike (1000) was lost, max %v", tc.n, tc.maxPoints, gotMax)
		}
		if !e.Down && len(e.X) != seen {
			t.Fatalf("n=%d: raw mode returned %d of %d points", tc.n, len(e.X), seen)
		}
	}
}

func TestDownsampleEmpty(t *testing.T) {
	e := Downsample(nil, nil, 10)
	if e.N != 0 || len(e.X) != 0 {
		t.Fatalf("empty input: %+v", e)
	}
	e = Downsample([]float64{1, 2}, []float32{float32(math.NaN()), float32(math.NaN())}, 10)
	if e.N != 0 || len(e.X) != 0 {
		t.Fatalf("all-missing input: %+v", e)
	}
}
