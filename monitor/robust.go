package monitor

import (
	"math"
	"sort"
)

// ring is a fixed-capacity window of the most recent values.
type ring struct {
	buf  []float64
	next int
	full bool
}

func newRing(n int) *ring { return &ring{buf: make([]float64, n)} }

func (r *ring) push(v float64) {
	r.buf[r.next] = v
	r.next++
	if r.next == len(r.buf) {
		r.next, r.full = 0, true
	}
}

func (r *ring) len() int {
	if r.full {
		return len(r.buf)
	}
	return r.next
}

// values returns the window oldest first (a new slice).
func (r *ring) values() []float64 {
	if !r.full {
		return append([]float64(nil), r.buf[:r.next]...)
	}
	out := make([]float64, 0, len(r.buf))
	out = append(out, r.buf[r.next:]...)
	return append(out, r.buf[:r.next]...)
}

func (r *ring) mean() float64 {
	n := r.len()
	if n == 0 {
		return math.NaN()
	}
	var s float64
	for _, v := range r.buf[:n] {
		s += v
	}
	return s / float64(n)
}

// median returns the median of xs (xs is sorted in place); NaN when empty.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	sort.Float64s(xs)
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}

// robust returns the median and the MAD-based standard deviation
// (1.4826·median|x-median|) of xs, which is left unchanged.
func robust(xs []float64) (med, sigma float64) {
	tmp := append([]float64(nil), xs...)
	med = median(tmp)
	for i, v := range xs {
		tmp[i] = math.Abs(v - med)
	}
	return med, 1.4826 * median(tmp)
}

// robustZ is (x-med)/sigma with sigma floored at a small fraction of |med|
// so a perfectly flat window does not turn noise into infinite z-scores.
func robustZ(x, med, sigma float64) float64 {
	floor := 1e-3 * math.Abs(med)
	if floor < 1e-12 {
		floor = 1e-12
	}
	if sigma < floor {
		sigma = floor
	}
	return (x - med) / sigma
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
