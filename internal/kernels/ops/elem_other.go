//go:build !amd64

package ops

// swigluFwdRow writes h = (g·σ)·u.
func swigluFwdRow(h, g, sg, u []float32) { swigluFwdRowGo(h, g, sg, u) }

// swigluBackRow writes du = (d·g)·σ and dg = ((d·u)·σ)·(1 + g·(1 − σ)).
func swigluBackRow(dg, du, d, g, u, sg []float32) { swigluBackRowGo(dg, du, d, g, u, sg) }

// ropeRow rotates the pairs (a_i, b_i) by (c_i, sign·s_i); see ropeRowGo.
func ropeRow(a, b, c, s []float32, sign float32) { ropeRowGo(a, b, c, s, sign) }

// maxRow returns the largest element of v as mx = max(mx, x) computes it.
func maxRow(v []float32) float32 { return maxRowGo(v) }

// firstMaxRow returns the largest element of v as "if x > mx { mx = x }"
// from mx = v[0] computes it.
func firstMaxRow(v []float32) float32 { return firstMaxRowGo(v) }

// scaleTo writes dst = src·s.
func scaleTo(dst, src []float32, s float32) { scaleToGo(dst, src, s) }

// rmsnormScale writes y_j = (x_j·r)·w_j.
func rmsnormScale(y, x, w []float32, r float32) { rmsnormScaleGo(y, x, w, r) }

// dsRow writes dp[j] = p[j]·(dp[j] − dot).
func dsRow(dp, p []float32, dot float32) { dsRowGo(dp, p, dot) }

// rmsBackTerms writes t_j = (dy_j·w_j)·x̂_j and adds dy_j·x̂_j into dw_j.
func rmsBackTerms(t, dw, dy, x, w []float32, r float32) { rmsBackTermsGo(t, dw, dy, x, w, r) }

// rmsnormBackApply: with m = dot/n, dx_j (+)= r·(dy_j·w_j − x̂_j·m).
func rmsnormBackApply(dx, dy, x, w []float32, r, dot float32, inPlace bool) {
	rmsBackApplyGo(dx, dy, x, w, r, dot/float32(len(x)), inPlace)
}

// ropeRows reports that no vector kernel rotated the rows (rope runs them
// row by row).
func ropeRows(x, cos, sin []float32, T, stride, off, nh, hd, s, e int, sign float32) bool {
	return false
}

// sumSquares16 reports that no vector kernel summed the rows.
func sumSquares16(x []float32, C int, ss *[16]float32) bool { return false }

// sumRows16 reports that no vector kernel summed the rows.
func sumRows16(x []float32, C int, d *[16]float32) bool { return false }
