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

// dotRows8 sets s[i] = Σ_j<n p[i·ld+j]·d[i·ld+j] for the rows i < 8, each
// summed over j in order.
func dotRows8(p, d []float32, ld, n int, s *[8]float32) {
	for i := range s {
		pr, dr := p[i*ld:i*ld+n], d[i*ld:i*ld+n]
		var dot float32
		for j, v := range pr {
			dot += v * dr[j]
		}
		s[i] = dot
	}
}

// prefetchRows does nothing here.
func prefetchRows(x []float32, ld, rows, n int) {}
