package kernels

// SquaresAdd returns Dot(dst, dst) and Dot(x, x), the same bits, and then
// adds x into dst (Add(dst, dst, x)), reading both once (on AVX2: one
// pass); x must be at least as long as dst. internal/replicas folds a
// replica's gradient into the model's with it, the two squared norms for
// the noise scale on the way.
func SquaresAdd(dst, x []float32) (dd, xx float32) { return sqAddImpl(dst, x[:len(dst)]) }

var sqAddImpl = sqAddGo

func sqAddGo(dst, x []float32) (dd, xx float32) {
	dd, xx = dotImpl(dst, dst), dotImpl(x, x)
	addImpl(dst, dst, x)
	return dd, xx
}
