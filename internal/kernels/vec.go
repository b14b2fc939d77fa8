package kernels

// Vector primitives on float32 slices. Each has a pure-Go version (the *Go
// functions, also the reference in tests) and, where it pays, an assembly
// version selected at start-up.

// Dot returns Σ a[i]·b[i] over len(a) elements; b must be at least as long.
func Dot(a, b []float32) float32 { return dotImpl(a, b[:len(a)]) }

// Axpy computes y[i] += alpha·x[i] over len(x) elements; y must be at least
// as long.
func Axpy(alpha float32, x, y []float32) { axpyImpl(alpha, x, y[:len(x)]) }

// Scale computes x[i] *= alpha.
func Scale(alpha float32, x []float32) { scaleImpl(alpha, x) }

// Add computes dst[i] = a[i] + b[i] over len(dst) elements; a and b must be
// at least as long. dst may alias a or b.
func Add(dst, a, b []float32) { addImpl(dst, a[:len(dst)], b[:len(dst)]) }

var (
	dotImpl   = dotGo
	axpyImpl  = axpyGo
	scaleImpl = scaleGo
	addImpl   = addGo
)

func dotGo(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}

func axpyGo(alpha float32, x, y []float32) {
	y = y[:len(x)]
	for i, v := range x {
		y[i] += alpha * v
	}
}

func scaleGo(alpha float32, x []float32) {
	for i := range x {
		x[i] *= alpha
	}
}

func addGo(dst, a, b []float32) {
	a = a[:len(dst)]
	b = b[:len(dst)]
	for i := range dst {
		dst[i] = a[i] + b[i]
	}
}
