package optim

// emaAVX512 is the EMA update's AVX-512 kernel (ema_amd64.s): the same
// operations in the same order as emaGo, so the results are bit-identical;
// n is a positive multiple of 8 and emaUpdate bounds-checks both slices
// first.
//
//go:noescape
func emaAVX512(w, p *float32, n int, b, c float64)

// emaUpdate sets w[i] = float32(b·w[i] + c·p[i]) (float64 arithmetic).
func emaUpdate(w, p []float32, b, c float64) {
	p = p[:len(w)]
	n := len(w) &^ 7
	if !useAVX512 || n == 0 {
		emaGo(w, p, b, c)
		return
	}
	emaAVX512(&w[0], &p[0], n, b, c)
	emaGo(w[n:], p[n:], b, c)
}
