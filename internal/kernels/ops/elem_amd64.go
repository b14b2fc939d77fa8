package ops

import "golang.org/x/sys/cpu"

// The AVX2 twins of the elementwise row loops (elem_amd64.s): same
// operations in the same order, 8 lanes at a time, over slices whose
// length is a multiple of 8 (the wrappers below cut them and run the tail
// in Go, and their slicing bounds-checks every operand first).

//go:noescape
func swigluFwdAVX2(h, g, sg, u []float32)

//go:noescape
func swigluBackAVX2(dg, du, d, g, u, sg []float32)

//go:noescape
func swigluFwdAVX512(h, g, sg, u []float32)

//go:noescape
func swigluBackAVX512(dg, du, d, g, u, sg []float32)

//go:noescape
func ropeAVX2(a, b, c, s []float32, sign float32)

//go:noescape
func sumSquares16AVX512(x *float32, C int, out *[16]float32)

//go:noescape
func sumRows16AVX512(x *float32, C int, out *[16]float32)

//go:noescape
func ropeRowsAVX512(x *float32, stride int, c, s *float32, p0, T, rows, nh, hd int, sign float32)

// useElemAVX2 selects the vector kernels (tests switch it off to compare).
var useElemAVX2 = cpu.X86.HasAVX2

// useElem512 selects the AVX-512 elementwise kernels, which repeat the
// AVX2 kernels' per-lane arithmetic 16 lanes at a time (tests switch it
// off to compare).
var useElem512 = cpu.X86.HasAVX512F && cpu.X86.HasAVX2

// ropeRows rotates rows [s, e) as rope does with ropeRowsAVX512, one call
// for all of them, when the CPU has AVX-512 and hd/2 is a multiple of 8;
// it reports whether it did (else rope runs row by row). Every operand is
// bounds-checked first.
func ropeRows(x, cos, sin []float32, T, stride, off, nh, hd, s, e int, sign float32) bool {
	half := hd / 2
	if !useElem512 || !useElemAVX2 || half == 0 || half%8 != 0 || nh <= 0 || e <= s || T <= 0 {
		return false
	}
	// the last position a row of [s, e) reads in the tables
	p0 := s % T
	last := T - 1
	if p0+(e-s)-1 < T {
		last = p0 + (e - s) - 1
	}
	_ = cos[(last+1)*half-1]
	_ = sin[(last+1)*half-1]
	_ = x[(e-1)*stride+off+nh*hd-1]
	ropeRowsAVX512(&x[s*stride+off], stride, &cos[0], &sin[0], p0, T, e-s, nh, hd, sign)
	return true
}

// swigluFwdRow writes h = (g·σ)·u.
func swigluFwdRow(h, g, sg, u []float32) {
	n := len(g)
	if m := n &^ 7; useElemAVX2 && m > 0 {
		if useElem512 {
			swigluFwdAVX512(h[:m], g[:m], sg[:m], u[:m])
		} else {
			swigluFwdAVX2(h[:m], g[:m], sg[:m], u[:m])
		}
		h, g, sg, u = h[m:n], g[m:], sg[m:n], u[m:n]
	}
	swigluFwdRowGo(h, g, sg, u)
}

// swigluBackRow writes du = (d·g)·σ and dg = ((d·u)·σ)·(1 + g·(1 − σ)).
func swigluBackRow(dg, du, d, g, u, sg []float32) {
	n := len(d)
	if m := n &^ 7; useElemAVX2 && m > 0 {
		if useElem512 {
			swigluBackAVX512(dg[:m], du[:m], d[:m], g[:m], u[:m], sg[:m])
		} else {
			swigluBackAVX2(dg[:m], du[:m], d[:m], g[:m], u[:m], sg[:m])
		}
		dg, du, d, g, u, sg = dg[m:n], du[m:n], d[m:], g[m:n], u[m:n], sg[m:n]
	}
	swigluBackRowGo(dg, du, d, g, u, sg)
}

// ropeRow rotates the pairs (a_i, b_i) by (c_i, sign·s_i); see ropeRowGo.
func ropeRow(a, b, c, s []float32, sign float32) {
	n := len(a)
	if m := n &^ 7; useElemAVX2 && m > 0 {
		ropeAVX2(a[:m], b[:m], c[:m], s[:m], sign)
		a, b, c, s = a[m:], b[m:n], c[m:n], s[m:n]
	}
	ropeRowGo(a, b, c, s, sign)
}

//go:noescape
func maxAVX2(v []float32) (mx float32, ok bool)

//go:noescape
func scaleToAVX2(dst, src []float32, s float32)

// vecMax returns the largest element of v[:len(v)&^7] when the vector
// kernel can stand in for a scalar scan: no NaN among them and a non-zero
// maximum (so no ±0 tie decides the result). ok is false otherwise.
func vecMax(v []float32) (mx float32, n int, ok bool) {
	n = len(v) &^ 7
	if !useElemAVX2 || n == 0 {
		return 0, 0, false
	}
	mx, ok = maxAVX2(v[:n])
	return mx, n, ok && mx != 0
}

// maxRow returns the largest element of v (len ≥ 1) as the loop
// mx = max(mx, x) over v computes it (a NaN anywhere gives NaN; +0 beats −0).
func maxRow(v []float32) float32 {
	mx, n, ok := vecMax(v)
	if !ok {
		return maxRowGo(v)
	}
	for _, x := range v[n:] {
		mx = max(mx, x)
	}
	return mx
}

// firstMaxRow returns the largest element of v (len ≥ 1) as the loop
// "if x > mx { mx = x }" from mx = v[0] computes it (NaNs after v[0] are
// skipped; among equal zeros the first wins).
func firstMaxRow(v []float32) float32 {
	mx, n, ok := vecMax(v)
	if !ok {
		return firstMaxRowGo(v)
	}
	for _, x := range v[n:] {
		if x > mx {
			mx = x
		}
	}
	return mx
}

// scaleTo writes dst = src·s.
func scaleTo(dst, src []float32, s float32) {
	n := len(src)
	if m := n &^ 7; useElemAVX2 && m > 0 {
		scaleToAVX2(dst[:m], src[:m], s)
		dst, src = dst[m:n], src[m:]
	}
	scaleToGo(dst, src, s)
}

//go:noescape
func rmsScaleAVX2(y, x, w []float32, r float32)

//go:noescape
func rmsScaleAVX512(y, x, w []float32, r float32)

// rmsnormScale writes y_j = (x_j·r)·w_j.
func rmsnormScale(y, x, w []float32, r float32) {
	n := len(x)
	if m := n &^ 7; useElemAVX2 && m > 0 {
		if useElem512 {
			rmsScaleAVX512(y[:m], x[:m], w[:m], r)
		} else {
			rmsScaleAVX2(y[:m], x[:m], w[:m], r)
		}
		y, x, w = y[m:n], x[m:], w[m:n]
	}
	rmsnormScaleGo(y, x, w, r)
}

//go:noescape
func dsRowAVX2(dp, p []float32, dot float32)

// dsRow writes dp[j] = p[j]·(dp[j] − dot) (the softmax backward), 8 lanes
// at a time with AVX2 (a subtraction and a product, each rounded, as in
// dsRowGo).
func dsRow(dp, p []float32, dot float32) {
	n := len(dp)
	if m := n &^ 7; useElemAVX2 && m > 0 {
		dsRowAVX2(dp[:m], p[:m], dot)
		dp, p = dp[m:], p[m:n]
	}
	dsRowGo(dp, p, dot)
}

//go:noescape
func rmsBackTermsAVX2(t, dw, dy, x, w []float32, r float32)

//go:noescape
func rmsBackApplyAVX2(dx, dy, x, w []float32, r, m float32, add bool)

//go:noescape
func rmsBackTermsAVX512(t, dw, dy, x, w []float32, r float32)

//go:noescape
func rmsBackApplyAVX512(dx, dy, x, w []float32, r, m float32, add bool)

// rmsBackTerms writes t_j = (dy_j·w_j)·x̂_j and adds dy_j·x̂_j into dw_j
// (x̂_j = x_j·r): one row's share of RMSNorm's backward before the dot.
func rmsBackTerms(t, dw, dy, x, w []float32, r float32) {
	n := len(t)
	if m := n &^ 7; useElemAVX2 && m > 0 {
		if useElem512 {
			rmsBackTermsAVX512(t[:m], dw[:m], dy[:m], x[:m], w[:m], r)
		} else {
			rmsBackTermsAVX2(t[:m], dw[:m], dy[:m], x[:m], w[:m], r)
		}
		t, dw, dy, x, w = t[m:], dw[m:n], dy[m:n], x[m:n], w[m:n]
	}
	rmsBackTermsGo(t, dw, dy, x, w, r)
}

// rmsnormBackApply is the second half of a row's backward: with m =
// dot/n, dx_j (+)= r·(dy_j·w_j − x̂_j·m); with inPlace dx is overwritten
// (it may alias dy).
func rmsnormBackApply(dx, dy, x, w []float32, r, dot float32, inPlace bool) {
	n := len(x)
	m := dot / float32(n)
	if k := n &^ 7; useElemAVX2 && k > 0 {
		if useElem512 {
			rmsBackApplyAVX512(dx[:k], dy[:k], x[:k], w[:k], r, m, !inPlace)
		} else {
			rmsBackApplyAVX2(dx[:k], dy[:k], x[:k], w[:k], r, m, !inPlace)
		}
		dx, dy, x, w = dx[k:n], dy[k:n], x[k:], w[k:n]
	}
	rmsBackApplyGo(dx, dy, x, w, r, m, inPlace)
}

// sumSquares16 sets ss[q] = Σ_j x[q·C+j]² for the 16 rows of x (16·C
// floats), each summed as sumSquares4 sums a row (one float32 chain in
// order), with sumSquares16AVX512 when the CPU has AVX-512 and C is a
// multiple of 16; it reports whether it did.
func sumSquares16(x []float32, C int, ss *[16]float32) bool {
	if !useElem512 || !useElemAVX2 || C <= 0 || C%16 != 0 {
		return false
	}
	_ = x[16*C-1]
	sumSquares16AVX512(&x[0], C, ss)
	return true
}

// sumRows16 adds Σ_j x[q·C+j] into d[q] for the 16 rows of x (16·C
// floats), each as one float32 chain in order (seqSums' sums), with
// sumRows16AVX512 when the CPU has AVX-512 and C is a multiple of 16; it
// reports whether it did.
func sumRows16(x []float32, C int, d *[16]float32) bool {
	if !useElem512 || !useElemAVX2 || C <= 0 || C%16 != 0 {
		return false
	}
	_ = x[16*C-1]
	sumRows16AVX512(&x[0], C, d)
	return true
}
