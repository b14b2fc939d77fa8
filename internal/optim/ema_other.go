//go:build !amd64

package optim

// emaUpdate sets w[i] = float32(b·w[i] + c·p[i]) (float64 arithmetic).
func emaUpdate(w, p []float32, b, c float64) { emaGo(w, p, b, c) }
