package kernels

//go:noescape
func sqAddAVX2(dst, x *float32, n int) (dd, xx float32)

func init() {
	if hasAVX2() {
		sqAddImpl = sqAddVec
	}
}

// sqAddVec is SquaresAdd in one pass: the AVX2 loop over the largest
// multiple of 8 elements, the rest as dotVec and addVec finish theirs.
func sqAddVec(dst, x []float32) (dd, xx float32) {
	n := len(dst)
	x = x[:n]
	if n < vecMin {
		return sqAddGo(dst, x)
	}
	v := n &^ 7
	dd, xx = sqAddAVX2(&dst[0], &x[0], v)
	for i := v; i < n; i++ {
		dd += dst[i] * dst[i]
		xx += x[i] * x[i]
	}
	addGo(dst[v:], dst[v:], x[v:])
	return dd, xx
}
