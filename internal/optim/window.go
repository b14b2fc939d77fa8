package optim

import "math"

// Window is a fixed-capacity rolling window of recent values, oldest first.
// Its fields are exported so it round-trips exactly through JSON.
type Window struct {
	Cap  int       `json:"cap"`
	Vals []float64 `json:"vals"`
}

// NewWindow returns an empty window of capacity n.
func NewWindow(n int) *Window { return &Window{Cap: n, Vals: make([]float64, 0, n)} }

// Push appends v, dropping the oldest value when full.
func (w *Window) Push(v float64) {
	if len(w.Vals) == w.Cap {
		copy(w.Vals, w.Vals[1:])
		w.Vals = w.Vals[:w.Cap-1]
	}
	w.Vals = append(w.Vals, v)
}

// Len is the number of values held.
func (w *Window) Len() int { return len(w.Vals) }

// MeanStd returns the mean and population standard deviation, summed in
// order so the result is reproducible.
func (w *Window) MeanStd() (mean, std float64) {
	n := float64(len(w.Vals))
	if n == 0 {
		return 0, 0
	}
	for _, v := range w.Vals {
		mean += v
	}
	mean /= n
	for _, v := range w.Vals {
		d := v - mean
		std += d * d
	}
	return mean, math.Sqrt(std / n)
}

// Threshold returns mean + k·std and whether the window holds at least
// minN values (below that the threshold is not active).
func (w *Window) Threshold(k float64, minN int) (float64, bool) {
	if len(w.Vals) < minN {
		return math.Inf(1), false
	}
	m, s := w.MeanStd()
	return m + k*s, true
}
