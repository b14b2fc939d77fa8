package optim

import "golang.org/x/sys/cpu"

// The AVX-512 kernels of the AdamW step (adamw_amd64.s): the same
// operations in the same order as the Go loops of adamw.go, so the results
// are bit-identical; n is a positive multiple of 8 and the wrappers below
// bounds-check every slice first, so the assembly never reads or writes
// outside them.

//go:noescape
func adamDirAVX512(mode int, gr, m, v, p *float32, n int, k *adamConsts, acc *[6]float64)

//go:noescape
func adamCommitAVX512(gr, m, v, p *float32, n int, k *adamConsts)

//go:noescape
func nadamDirAVX512(mode int, gr, m, v, p *float32, n int, k *adamConsts, acc *[6]float64)

//go:noescape
func nadamCommitAVX512(gr, m, v, p *float32, n int, k *adamConsts)

//go:noescape
func adamDirStoreAVX512(mode int, gr, m, v, p *float32, n int, k *adamConsts, acc *[6]float64, out *[3]*float32)

//go:noescape
func nadamDirStoreAVX512(mode int, gr, m, v, p *float32, n int, k *adamConsts, acc *[6]float64, out *[3]*float32)

//go:noescape
func thetaAVX512(p, u *float32, n int, step float64)

//go:noescape
func thetaEMAAVX512(p, u, w *float32, n int, step, b, c float64)

//go:noescape
func sumSqAVX512(x *float32, n int, acc float64) float64

//go:noescape
func sumSq8AVX512(x *[8]*float32, n int, acc *[8]float64)

// useAVX512 selects the assembly path (the tests switch it off to compare
// with the Go loops).
var useAVX512 = cpu.X86.HasAVX512F && cpu.X86.HasAVX512VL

// sumSquares returns acc + Σ float64(x[j])², added in element order.
func sumSquares(x []float32, acc float64) float64 {
	n := len(x) &^ 7
	if !useAVX512 || n == 0 {
		return sumSquaresGo(x, acc)
	}
	acc = sumSqAVX512(&x[0], n, acc)
	return sumSquaresGo(x[n:], acc)
}

// sumSquares8 adds Σ float64(x[i][j])² in element order to acc[i] for
// eight slices of one length; it reports false (and does nothing) without
// AVX-512.
func sumSquares8(x *[8][]float32, acc *[8]float64) bool {
	n := len(x[0])
	if !useAVX512 || n < 8 {
		return false
	}
	var ptr [8]*float32
	for i := range x {
		if len(x[i]) != n {
			return false
		}
		ptr[i] = &x[i][0]
	}
	v := n &^ 7
	sumSq8AVX512(&ptr, v, acc)
	for i := range x {
		acc[i] = sumSquaresGo(x[i][v:], acc[i])
	}
	return true
}

// adamDir is pass 1 of the step over one segment (see adamDirGo): NAdamW's
// kernel with k.nesterov, else AdamW's.
func adamDir(mode int, g, m, v, p []float32, k *adamConsts, acc *[6]float64) {
	n := len(g) &^ 7
	if !useAVX512 || n == 0 {
		adamDirGo(mode, g, m, v, p, k, acc)
		return
	}
	_, _, _ = m[len(g)-1], v[len(g)-1], p[len(g)-1]
	if k.nesterov {
		nadamDirAVX512(mode, &g[0], &m[0], &v[0], &p[0], n, k, acc)
	} else {
		adamDirAVX512(mode, &g[0], &m[0], &v[0], &p[0], n, k, acc)
	}
	adamDirGo(mode, g[n:], m[n:], v[n:], p[n:], k, acc)
}

// adamCommit is pass 2 of the step over one segment (see adamCommitGo):
// NAdamW's kernel with k.nesterov, else AdamW's.
func adamCommit(g, m, v, p []float32, k *adamConsts) {
	n := len(g) &^ 7
	if !useAVX512 || n == 0 {
		adamCommitGo(g, m, v, p, k)
		return
	}
	_, _, _ = m[len(g)-1], v[len(g)-1], p[len(g)-1]
	if k.nesterov {
		nadamCommitAVX512(&g[0], &m[0], &v[0], &p[0], n, k)
	} else {
		adamCommitAVX512(&g[0], &m[0], &v[0], &p[0], n, k)
	}
	adamCommitGo(g[n:], m[n:], v[n:], p[n:], k)
}

// adamDirStore is the storing pass 1 over one segment (adamDirStoreGo).
func adamDirStore(mode int, g, m, v, p, m2, v2, u []float32, k *adamConsts, acc *[6]float64) {
	n := len(g) &^ 7
	if !useAVX512 || n == 0 {
		adamDirStoreGo(mode, g, m, v, p, m2, v2, u, k, acc)
		return
	}
	_, _, _, _, _, _ = m[len(g)-1], v[len(g)-1], p[len(g)-1], m2[len(g)-1], v2[len(g)-1], u[len(g)-1]
	out := [3]*float32{&m2[0], &v2[0], &u[0]}
	if k.nesterov {
		nadamDirStoreAVX512(mode, &g[0], &m[0], &v[0], &p[0], n, k, acc, &out)
	} else {
		adamDirStoreAVX512(mode, &g[0], &m[0], &v[0], &p[0], n, k, acc, &out)
	}
	adamDirStoreGo(mode, g[n:], m[n:], v[n:], p[n:], m2[n:], v2[n:], u[n:], k, acc)
}

// thetaUpdate sets p[i] = float32(float64(p[i]) − step·float64(u[i])).
func thetaUpdate(p, u []float32, step float64) {
	u = u[:len(p)]
	n := len(p) &^ 7
	if !useAVX512 || n == 0 {
		thetaGo(p, u, step)
		return
	}
	thetaAVX512(&p[0], &u[0], n, step)
	thetaGo(p[n:], u[n:], step)
}

// thetaEMAUpdate is thetaUpdate followed by the EMA update of w from the
// new p (thetaEMAGo), in one pass.
func thetaEMAUpdate(p, u, w []float32, step, b, c float64) {
	u, w = u[:len(p)], w[:len(p)]
	n := len(p) &^ 7
	if !useAVX512 || n == 0 {
		thetaEMAGo(p, u, w, step, b, c)
		return
	}
	thetaEMAAVX512(&p[0], &u[0], &w[0], n, step, b, c)
	thetaEMAGo(p[n:], u[n:], w[n:], step, b, c)
}
