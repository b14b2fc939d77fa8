//go:build !amd64

package ops

// log8 sets out[i] = math.Log(x[i]) for i < 8.
func log8(x, out *[8]float64) { log8Go(x, out) }
