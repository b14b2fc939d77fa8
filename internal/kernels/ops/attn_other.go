//go:build !amd64

package ops

// attnAVX512 is false: the attention op runs on kernels.Sgemm.
var attnAVX512 = false

// attnTile and attnTransT exist on amd64 only (attn_amd64.go); they are
// never called here.
func attnTile(rows, w, k int, a []float32, rs, cs int, b []float32, ldb int, c []float32, ldc int, alpha, beta float32) {
	panic("ops: attention tile kernels need amd64")
}

func attnTransT(dst []float32, ldd int, src []float32, lds, rows, n int) {
	panic("ops: attention tile kernels need amd64")
}
