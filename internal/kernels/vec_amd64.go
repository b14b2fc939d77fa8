package kernels

// AVX2 vector primitives (gemm_amd64.s). Each processes the largest
// multiple of 8 elements of n; the wrappers finish the rest in Go.

//go:noescape
func dotAVX2(a, b *float32, n int) float32

//go:noescape
func axpyAVX2(alpha float32, x, y *float32, n int)

//go:noescape
func scaleAVX2(alpha float32, x *float32, n int)

//go:noescape
func addAVX2(dst, a, b *float32, n int)

func init() {
	if hasAVX2() {
		dotImpl, axpyImpl, scaleImpl, addImpl = dotVec, axpyVec, scaleVec, addVec
	}
}

// vecMin is the length below which the Go loops are used (the call and the
// horizontal sum would cost more than they save).
const vecMin = 16

func dotVec(a, b []float32) float32 {
	n := len(a)
	b = b[:n]
	if n < vecMin {
		return dotGo(a, b)
	}
	v := n &^ 7
	s := dotAVX2(&a[0], &b[0], v)
	for i := v; i < n; i++ {
		s += a[i] * b[i]
	}
	return s
}

func axpyVec(alpha float32, x, y []float32) {
	n := len(x)
	y = y[:n]
	if n < vecMin {
		axpyGo(alpha, x, y)
		return
	}
	v := n &^ 7
	axpyAVX2(alpha, &x[0], &y[0], v)
	axpyGo(alpha, x[v:], y[v:])
}

func scaleVec(alpha float32, x []float32) {
	n := len(x)
	if n < vecMin {
		scaleGo(alpha, x)
		return
	}
	v := n &^ 7
	scaleAVX2(alpha, &x[0], v)
	scaleGo(alpha, x[v:])
}

func addVec(dst, a, b []float32) {
	n := len(dst)
	a, b = a[:n], b[:n]
	if n < vecMin {
		addGo(dst, a, b)
		return
	}
	v := n &^ 7
	addAVX2(&dst[0], &a[0], &b[0], v)
	addGo(dst[v:], a[v:], b[v:])
}
