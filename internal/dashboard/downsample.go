package dashboard

import "math"

// Envelope is a series reduced for plotting: per bucket the x of its first
// point, the mean, and the minimum and maximum of every raw value that fell
// in the bucket. Drawing Lo..Hi as a band keeps every spike visible however
// many points are merged (TensorBoard's reservoir sampling drops them).
type Envelope struct {
	X    []float64 `json:"x"`
	Y    []float64 `json:"y"`
	Lo   []float64 `json:"lo"`
	Hi   []float64 `json:"hi"`
	N    int       `json:"n"`              // raw points
	Down bool      `json:"downsampled"`    // true when buckets merge points
	Last float64   `json:"last,omitempty"` // last raw value
}

// Downsample reduces the points (x[i], y[i]) — x ascending, NaN y skipped —
// to at most maxPoints buckets of equal x width. With maxPoints ≤ 0 or
// enough room, it returns the raw points (Lo = Hi = Y).
func Downsample(x []float64, y []float32, maxPoints int) Envelope {
	var e Envelope
	n := 0
	for _, v := range y {
		if !math.IsNaN(float64(v)) {
			n++
		}
	}
	e.N = n
	if n == 0 {
		return e
	}
	if maxPoints <= 0 || n <= maxPoints {
		e.X = make([]float64, 0, n)
		e.Y = make([]float64, 0, n)
		for i, v := range y {
			if math.IsNaN(float64(v)) {
				continue
			}
			e.X = append(e.X, x[i])
			e.Y = append(e.Y, float64(v))
			e.Last = float64(v)
		}
		e.Lo, e.Hi = e.Y, e.Y
		return e
	}
	e.Down = true
	lo, hi := math.Inf(1), math.Inf(-1)
	for i, v := range y {
		if !math.IsNaN(float64(v)) {
			lo = min(lo, x[i])
			hi = max(hi, x[i])
		}
	}
	width := (hi - lo) / float64(maxPoints)
	if width <= 0 {
		width = 1
	}
	bucket := -1
	var sum float64
	var cnt int
	flush := func() {
		if cnt > 0 {
			e.Y[len(e.Y)-1] = sum / float64(cnt)
		}
	}
	for i, v := range y {
		if math.IsNaN(float64(v)) {
			continue
		}
		f := float64(v)
		b := int((x[i] - lo) / width)
		if b >= maxPoints {
			b = maxPoints - 1
		}
		if b != bucket {
			flush()
			bucket = b
			sum, cnt = 0, 0
			e.X = append(e.X, x[i])
			e.Y = append(e.Y, f)
			e.Lo = append(e.Lo, f)
			e.Hi = append(e.Hi, f)
		}
		k := len(e.Y) - 1
		sum += f
		cnt++
		if f < e.Lo[k] || math.IsInf(f, -1) {
			e.Lo[k] = f
		}
		if f > e.Hi[k] || math.IsInf(f, 1) {
			e.Hi[k] = f
		}
		e.Last = f
	}
	flush()
	return e
}
