package ops

import "math"

// The scalar row loops the vector kernels (elem_amd64.s) must match bit for
// bit; the wrappers maxRow, firstMaxRow, scaleTo, rmsnormScale, dsRow,
// ropeRow, swigluFwdRow and swigluBackRow pick between them.

// maxRowGo is mx = max(mx, x) over v (len ≥ 1): NaN if any element is NaN,
// +0 over −0.
func maxRowGo(v []float32) float32 {
	mx := v[0]
	for _, x := range v {
		mx = max(mx, x)
	}
	return mx
}

// firstMaxRowGo is "if x > mx { mx = x }" over v from mx = v[0].
func firstMaxRowGo(v []float32) float32 {
	mx := v[0]
	for _, x := range v {
		if x > mx {
			mx = x
		}
	}
	return mx
}

// scaleToGo writes dst = src·s.
func scaleToGo(dst, src []float32, s float32) {
	dst = dst[:len(src)]
	for i, x := range src {
		dst[i] = x * s
	}
}

// dsRowGo writes dp[j] = p[j]·(dp[j] − dot) (the softmax backward).
func dsRowGo(dp, p []float32, dot float32) {
	p = p[:len(dp)]
	for j, pv := range p {
		dp[j] = pv * (dp[j] - dot)
	}
}

// rmsnormScaleGo writes y_j = x_j·r·w_j (RMSNorm's scaling).
func rmsnormScaleGo(y, x, w []float32, r float32) {
	y = y[:len(x)]
	w = w[:len(x)]
	for j, v := range x {
		y[j] = v * r * w[j]
	}
}

// rmsBackTermsGo is rmsBackTerms in Go: x̂_j = x_j·r, t_j = (dy_j·w_j)·x̂_j,
// dw_j += dy_j·x̂_j, every product rounded to float32 before it is used.
func rmsBackTermsGo(t, dw, dy, x, w []float32, r float32) {
	n := len(t)
	dw, dy, x, w = dw[:n], dy[:n], x[:n], w[:n]
	for j := range t {
		xh := float32(x[j] * r)
		t[j] = float32(dy[j]*w[j]) * xh
		dw[j] += float32(dy[j] * xh)
	}
}

// rmsBackApplyGo is rmsnormBackApply in Go given m = dot/n:
// g = r·(dy_j·w_j − (x_j·r)·m), added into dx_j or, inPlace, stored.
func rmsBackApplyGo(dx, dy, x, w []float32, r, m float32, inPlace bool) {
	n := len(x)
	dx, dy, w = dx[:n], dy[:n], w[:n]
	for j := range x {
		xh := float32(x[j] * r)
		g := r * (float32(dy[j]*w[j]) - float32(xh*m))
		if inPlace {
			dx[j] = g
		} else {
			dx[j] += g
		}
	}
}

// log8Go is log8 one math.Log at a time.
func log8Go(x, out *[8]float64) {
	for i, v := range x {
		out[i] = math.Log(v)
	}
}
