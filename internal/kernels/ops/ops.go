// Package ops holds the transformer's neural-network operations as explicit
// forward/backward function pairs over float32 row-major slices, in the
// style of llm.c: each pair carries its math in a comment, nothing
// allocates, and every function works on a row range [s, e) so callers can
// split the rows over the worker pool (see Runner). Matrix products go
// through kernels.Sgemm.
//
// Conventions: N rows (tokens), C columns; backward functions ADD into
// parameter gradients (dw) and, unless stated otherwise, into input
// gradients too, so callers zero them once per step.
package ops

import (
	"math"

	"github.com/kestrel-lm/kestrel/internal/kernels"
)

// ---------------------------------------------------------------- embedding

// EmbeddingForward gathers rows: out[i,:] = wte[tokens[i],:] for i in [s, e).
func EmbeddingForward(out []float32, tokens []int32, wte []float32, C, s, e int) {
	for i := s; i < e; i++ {
		t := int(tokens[i])
		copy(out[i*C:(i+1)*C], wte[t*C:(t+1)*C])
	}
}

// EmbeddingBackward scatters: dwte[tokens[i],:] += dout[i,:] for every row.
// It runs serially (rows with equal tokens hit the same gradient row), each
// row's adds as one vector add (kernels.Add: the same float32 sums).
func EmbeddingBackward(dwte, dout []float32, tokens []int32, C int) {
	for i, tok := range tokens {
		t := int(tok)
		g := dwte[t*C : (t+1)*C]
		kernels.Add(g, g, dout[i*C:(i+1)*C])
	}
}

// ------------------------------------------------------------------ RMSNorm

// RMSNormForward normalises each row by its root mean square:
//
//	rstd_i = 1/sqrt(mean_j(x_ij²) + eps),   y_ij = x_ij · rstd_i · w_j
//
// rstd is saved for the backward pass.
func RMSNormForward(out, rstd, inp, w []float32, C int, eps float32, s, e int) {
	i := s
	// Sixteen rows at a time on AVX-512 (one row's chain per lane, see
	// sumSquares16), then four: each row's sum of squares is the same sequential
	// float32 chain as rmsnormRow's (so the result is bit-identical), but
	// four independent chains hide the adder's latency.
	var ss16 [16]float32
	for ; i+16 <= e && sumSquares16(inp[i*C:(i+16)*C], C, &ss16); i += 16 {
		for q, ss := range ss16 {
			r := rmsFromSum(ss, C, eps)
			rmsnormScale(out[(i+q)*C:(i+q+1)*C], inp[(i+q)*C:(i+q+1)*C], w, r)
			rstd[i+q] = r
		}
	}
	for ; i+4 <= e; i += 4 {
		x := inp[i*C : (i+4)*C]
		s0, s1, s2, s3 := sumSquares4(x[:C], x[C:2*C], x[2*C:3*C], x[3*C:])
		for q, ss := range [4]float32{s0, s1, s2, s3} {
			r := rmsFromSum(ss, C, eps)
			rmsnormScale(out[(i+q)*C:(i+q+1)*C], x[q*C:(q+1)*C], w, r)
			rstd[i+q] = r
		}
	}
	for ; i < e; i++ {
		rstd[i] = rmsnormRow(out[i*C:(i+1)*C], inp[i*C:(i+1)*C], w, eps)
	}
}

func rmsnormRow(y, x, w []float32, eps float32) float32 {
	var ss float32
	for _, v := range x {
		ss += v * v
	}
	r := rmsFromSum(ss, len(x), eps)
	rmsnormScale(y, x, w, r)
	return r
}

// rmsFromSum is rstd = 1/sqrt(ss/n + eps).
func rmsFromSum(ss float32, n int, eps float32) float32 {
	return float32(1 / math.Sqrt(float64(ss/float32(n)+eps)))
}

// sumSquares4 returns Σ_j x_j² of four equally long rows, each summed in
// order j = 0, 1, … as one float32 chain.
func sumSquares4(x0, x1, x2, x3 []float32) (s0, s1, s2, s3 float32) {
	n := len(x0)
	x1, x2, x3 = x1[:n], x2[:n], x3[:n]
	for j, v := range x0 {
		s0 += v * v
		s1 += x1[j] * x1[j]
		s2 += x2[j] * x2[j]
		s3 += x3[j] * x3[j]
	}
	return
}

// RMSNormBackward with x̂ = x·rstd and g = w⊙dy:
//
//	dx_j += rstd · (g_j − x̂_j · mean_k(g_k·x̂_k)),   dw_j += Σ_i dy_ij · x̂_ij
//
// dw may be a per-chunk partial buffer (see the model's reduction).
func RMSNormBackward(dinp, dw, dout, inp, w, rstd []float32, C, s, e int) {
	rmsNormBackward(dinp, dw, dout, inp, w, rstd, C, s, e, false)
}

// rmsBackRows is how many rows rmsNormBackward takes together: their dots
// Σ_j g_j·x̂_j run as independent float32 chains side by side (one chain
// alone waits on every add). rmsBackBlock is the columns of those rows
// handled per pass: their products wait in a stack buffer of rmsBackRows ×
// rmsBackBlock floats, and each dot's chain carries on into the next pass.
const (
	rmsBackRows  = 16
	rmsBackBlock = 256
)

// rmsNormBackward is RMSNormBackward over rows [s, e); with inPlace the
// gradient overwrites dinp (which may alias dout, row for row) instead of
// being added. For each group of rows: the products t_ij = g_ij·x̂_ij
// (rmsBackTerms, which also adds dy_ij·x̂_ij into dw_j, row after row),
// their sums in order j = 0, 1, … (seqSums), then dx (rmsnormBackApply).
// Every dw_j receives the rows' terms in row order and every dot is its
// row's chain in column order, as a row-by-row loop computes them, so the
// result is the same whatever the grouping; all rows of a group read dout
// before any writes dinp.
func rmsNormBackward(dinp, dw, dout, inp, w, rstd []float32, C, s, e int, inPlace bool) {
	var t [rmsBackRows * rmsBackBlock]float32
	for i := s; i < e; i += rmsBackRows {
		var dots [rmsBackRows]float32
		rows := min(rmsBackRows, e-i)
		for j0 := 0; j0 < C; j0 += rmsBackBlock {
			n := min(rmsBackBlock, C-j0)
			for q := range rows {
				o := (i+q)*C + j0
				rmsBackTerms(t[q*n:(q+1)*n], dw[j0:j0+n], dout[o:o+n], inp[o:o+n], w[j0:j0+n], rstd[i+q])
			}
			seqSums(dots[:rows], t[:rows*n], n)
		}
		for q := range rows {
			o := (i + q) * C
			rmsnormBackApply(dinp[o:o+C], dout[o:o+C], inp[o:o+C], w[:C], rstd[i+q], dots[q], inPlace)
		}
	}
}

// seqSums adds each of t's rows (len(d) rows of n) into d: row q's
// elements one after another, in order, into d_q, as one float32 chain.
// Eight chains run side by side (sixteen on AVX-512: sumRows16).
func seqSums(d, t []float32, n int) {
	if len(d) == 16 {
		// one chain per lane on AVX-512, else two groups of eight
		var d16 [16]float32
		copy(d16[:], d)
		if sumRows16(t[:16*n], n, &d16) {
			copy(d, d16[:])
			return
		}
		seqSums(d[:8], t[:8*n], n)
		seqSums(d[8:], t[8*n:16*n], n)
		return
	}
	if len(d) != 8 {
		for q := range d {
			s := d[q]
			for _, v := range t[q*n : (q+1)*n] {
				s += v
			}
			d[q] = s
		}
		return
	}
	t0, t1, t2, t3 := t[:n], t[n:2*n], t[2*n:3*n], t[3*n:4*n]
	t4, t5, t6, t7 := t[4*n:5*n], t[5*n:6*n], t[6*n:7*n], t[7*n:8*n]
	d0, d1, d2, d3, d4, d5, d6, d7 := d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7]
	for j, v := range t0 {
		d0 += v
		d1 += t1[j]
		d2 += t2[j]
		d3 += t3[j]
		d4 += t4[j]
		d5 += t5[j]
		d6 += t6[j]
		d7 += t7[j]
	}
	d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7] = d0, d1, d2, d3, d4, d5, d6, d7
}

// HeadRMSNormForward is QK-Norm: an RMSNorm over each head vector of size hd
// with one shared gain w[hd]. Row n holds nh heads starting at n*stride+off;
// src and dst share that layout. rstd[n*nh+h] is saved.
func HeadRMSNormForward(dst, src, rstd, w []float32, stride, off, nh, hd int, eps float32, s, e int) {
	// a row's nh heads lie back to back: RMSNorm over nh rows of hd
	for n := s; n < e; n++ {
		o := n*stride + off
		RMSNormForward(dst[o:], rstd[n*nh:], src[o:], w, hd, eps, 0, nh)
	}
}

// HeadRMSNormBackward is the backward of HeadRMSNormForward, in place: d
// holds ∂L/∂dst on entry and ∂L/∂src on return (same layout); dw += the gain
// gradient (a per-chunk partial buffer when rows run in parallel).
func HeadRMSNormBackward(d, src, rstd, w, dw []float32, stride, off, nh, hd, s, e int) {
	for n := s; n < e; n++ {
		o := n*stride + off
		rmsNormBackward(d[o:], dw, d[o:], src[o:], w, rstd[n*nh:], hd, 0, nh, true)
	}
}

// --------------------------------------------------------------------- RoPE

// RoPETables fills cos/sin [T, hd/2] for rotary embeddings as Hugging Face
// Llama computes them: inv_freq_i = θ^(−2i/hd), angle(t, i) = t·inv_freq_i.
func RoPETables(cos, sin []float32, T, hd int, theta float64) {
	half := hd / 2
	for i := 0; i < half; i++ {
		inv := float32(1 / math.Pow(theta, float64(2*i)/float64(hd)))
		for t := 0; t < T; t++ {
			a := float64(float32(t) * inv)
			cos[t*half+i] = float32(math.Cos(a))
			sin[t*half+i] = float32(math.Sin(a))
		}
	}
}

// RoPEForward rotates, in place, nh head vectors per row (layout as in
// HeadRMSNormForward) by position p = n mod T, in the half-split
// ("rotate_half") layout of Hugging Face Llama, for i < hd/2:
//
//	y_i      = x_i·cos(p,i) − x_{i+hd/2}·sin(p,i)
//	y_{i+hd/2} = x_{i+hd/2}·cos(p,i) + x_i·sin(p,i)
func RoPEForward(x, cos, sin []float32, T, stride, off, nh, hd, s, e int) {
	rope(x, cos, sin, T, stride, off, nh, hd, s, e, 1)
}

// RoPEBackward applies the transposed rotation (angle −θ) to the gradient
// in place: dx = Rᵀ·dy.
func RoPEBackward(dx, cos, sin []float32, T, stride, off, nh, hd, s, e int) {
	rope(dx, cos, sin, T, stride, off, nh, hd, s, e, -1)
}

func rope(x, cos, sin []float32, T, stride, off, nh, hd, s, e int, sign float32) {
	if ropeRows(x, cos, sin, T, stride, off, nh, hd, s, e, sign) {
		return
	}
	half := hd / 2
	for n := s; n < e; n++ {
		p := n % T
		c := cos[p*half : (p+1)*half]
		sn := sin[p*half : (p+1)*half]
		for h := 0; h < nh; h++ {
			o := n*stride + off + h*hd
			ropeRow(x[o:o+half], x[o+half:o+hd], c, sn, sign)
		}
	}
}

// ropeRowGo rotates the pairs (a_i, b_i) by the angles of (c_i, s_i):
// a_i, b_i = a_i·c_i − b_i·(sign·s_i), b_i·c_i + a_i·(sign·s_i). The
// float32 conversions keep each product rounded on its own (no fused
// multiply-add), the order the vector kernel follows.
func ropeRowGo(a, b, c, s []float32, sign float32) {
	b, c, s = b[:len(a)], c[:len(a)], s[:len(a)]
	for i, x1 := range a {
		x2 := b[i]
		si := sign * s[i]
		a[i] = float32(x1*c[i]) - float32(x2*si)
		b[i] = float32(x2*c[i]) + float32(x1*si)
	}
}

// ------------------------------------------------------------------- SwiGLU

// SwiGLUForward with g = gu[n, 0:F], u = gu[n, F:2F]:
//
//	σ = sigmoid(g) (saved in sig for the backward),   h = g·σ·u
//
// With sig nil (forward-only passes) σ is not kept: it goes through a
// small buffer in cache, in pieces of swigluPiece, with the same values.
func SwiGLUForward(h, sig, gu []float32, F, s, e int) {
	var buf [swigluPiece]float32
	for n := s; n < e; n++ {
		g := gu[n*2*F : n*2*F+F]
		u := gu[n*2*F+F : (n+1)*2*F]
		o := h[n*F : (n+1)*F]
		if sig == nil {
			for j := 0; j < F; j += swigluPiece {
				k := min(swigluPiece, F-j)
				sigmoidRow(buf[:k], g[j:j+k])
				swigluFwdRow(o[j:j+k], g[j:j+k], buf[:k], u[j:j+k])
			}
			continue
		}
		sg := sig[n*F : (n+1)*F]
		sigmoidRow(sg, g)
		swigluFwdRow(o, g, sg, u)
	}
}

// swigluPiece is the piece of a row the forward-only SwiGLU computes σ
// for at a time: a multiple of the vector kernels' 8 lanes, so the pieces
// split the row where the kernels would (bit-identical to a whole row).
const swigluPiece = 256

func swigluFwdRowGo(h, g, sg, u []float32) {
	h, sg, u = h[:len(g)], sg[:len(g)], u[:len(g)]
	for j, gv := range g {
		h[j] = float32(gv*sg[j]) * u[j]
	}
}

// SwiGLUBackward writes (overwrites) dgu from dh and the saved σ(g):
//
//	du = dh·g·σ,   dg = dh·u·σ·(1 + g·(1 − σ))
func SwiGLUBackward(dgu, dh, gu, sig []float32, F, s, e int) {
	for n := s; n < e; n++ {
		g := gu[n*2*F : n*2*F+F]
		u := gu[n*2*F+F : (n+1)*2*F]
		dg := dgu[n*2*F : n*2*F+F]
		du := dgu[n*2*F+F : (n+1)*2*F]
		d := dh[n*F : (n+1)*F]
		sg := sig[n*F : (n+1)*F]
		swigluBackRow(dg, du, d, g, u, sg)
	}
}

// swigluBackRowGo writes du = (d·g)·σ and dg = ((d·u)·σ)·(1 + g·(1 − σ)),
// each product rounded on its own (the vector kernel's order).
func swigluBackRowGo(dg, du, d, g, u, sg []float32) {
	dg, du, g, u, sg = dg[:len(d)], du[:len(d)], g[:len(d)], u[:len(d)], sg[:len(d)]
	for j, dv := range d {
		gv, sv := g[j], sg[j]
		du[j] = float32(dv*gv) * sv
		dg[j] = float32(float32(dv*u[j])*sv) * (1 + float32(gv*(1-sv)))
	}
}

// sigmoidRowGo writes dst[i] = 1/(1+e^(−src[i])) (the exponent clamped to
// [−87, 88], which changes nothing in float32).
func sigmoidRowGo(dst, src []float32) {
	dst = dst[:len(src)]
	for i, x := range src {
		t := -x
		t = min(max(t, -87), 88)
		// e^t, inlined expCore
		q := t*log2e + expMagic
		kf := q - expMagic
		k := int32(math.Float32bits(q)) - 0x4B400000
		r := t - kf*ln2hi - kf*ln2lo
		p := ((((((r*(1.0/5040)+1.0/720)*r+1.0/120)*r+1.0/24)*r+1.0/6)*r+0.5)*r+1)*r + 1
		dst[i] = 1 / (1 + p*math.Float32frombits(uint32(k+127)<<23))
	}
}

// ----------------------------------------------------------------- residual

// ResidualForward: out = a + b over elements [s, e).
func ResidualForward(out, a, b []float32, s, e int) {
	for i := s; i < e; i++ {
		out[i] = a[i] + b[i]
	}
}

// ResidualBackward: da += dout, db += dout over elements [s, e).
func ResidualBackward(da, db, dout []float32, s, e int) {
	for i := s; i < e; i++ {
		da[i] += dout[i]
		db[i] += dout[i]
	}
}

// ------------------------------------------------------------------- matmul

// MatmulForward is a linear layer without bias, weights [out, in] as in
// Hugging Face: y[N,out] = x[N,in]·Wᵀ (+ y when accumulate).
func MatmulForward(y, x, w []float32, N, in, out int, accumulate bool) {
	MatmulForwardStrided(y, out, x, w, N, in, out, accumulate)
}

// MatmulForwardStrided is MatmulForward with the rows of y ldy ≥ out
// floats apart (the floats between rows are not touched).
func MatmulForwardStrided(y []float32, ldy int, x, w []float32, N, in, out int, accumulate bool) {
	var beta float32
	if accumulate {
		beta = 1
	}
	kernels.Sgemm(false, true, N, out, in, 1, x, in, w, in, beta, y, ldy)
}

// MatmulBackward: dx = dy·W (+ dx when accumulate), dW += dyᵀ·x. dx may be
// nil to skip the input gradient. The two products are independent and run
// side by side where that is faster (kernels.SgemmPair).
func MatmulBackward(dx, dw, dy, x, w []float32, N, in, out int, accumulate bool) {
	MatmulBackwardStrided(dx, dw, dy, out, x, w, N, in, out, accumulate)
}

// MatmulBackwardStrided is MatmulBackward with the rows of dy ldy ≥ out
// floats apart.
func MatmulBackwardStrided(dx, dw, dy []float32, ldy int, x, w []float32, N, in, out int, accumulate bool) {
	MatmulBackwardStridedBeta(dx, dw, dy, ldy, x, w, N, in, out, accumulate, 1)
}

// MatmulBackwardStridedBeta is MatmulBackwardStrided with the weight
// gradient dW = dyᵀ·x + wBeta·dW: wBeta 1 adds (MatmulBackwardStrided),
// 0 writes dW without reading it (the first pass of an accumulation).
func MatmulBackwardStridedBeta(dx, dw, dy []float32, ldy int, x, w []float32, N, in, out int, accumulate bool, wBeta float32) {
	matmulBackward(dx, dw, dy, ldy, x, w, N, in, out, accumulate, wBeta, false)
}

// matmulBackward is MatmulBackwardStridedBeta, its products on bf16 inputs
// when bf16 is set (Precision BF16): dW alone when dx is nil, else dX and
// dW side by side (SgemmPair).
func matmulBackward(dx, dw, dy []float32, ldy int, x, w []float32, N, in, out int, accumulate bool, wBeta float32, bf16 bool) {
	dW := kernels.GemmArgs{TransA: true, M: out, N: in, K: N, Alpha: 1, A: dy, Lda: ldy, B: x, Ldb: in, Beta: wBeta, C: dw, Ldc: in, BF16: bf16}
	if dx == nil {
		dW.Sgemm()
		return
	}
	var beta float32
	if accumulate {
		beta = 1
	}
	dX := kernels.GemmArgs{M: N, N: in, K: out, Alpha: 1, A: dy, Lda: ldy, B: w, Ldb: in, Beta: beta, C: dx, Ldc: in, BF16: bf16}
	kernels.SgemmPair(dX, dW)
}

// ------------------------------------------------------------ cross-entropy

// CrossEntropy computes, for rows [s, e) of logits z [N, V] (row i at
// z[i·ld:], ld ≥ V; the ld − V floats after each row are not touched) with
// targets y:
//
//	lse_i = log Σ_v exp(z_iv),   loss_i = lse_i − z_iy,   zl_i = λ·lse_i²
//
// and, when grad is non-nil, overwrites z in place with the gradient of
// Σ_i grad_i·(loss_i + zl_i):
//
//	dz_iv = grad_i · (softmax_iv·(1 + 2λ·lse_i) − [v = y_i])
//
// Rows with y_i < 0 are ignored (loss 0, gradient 0).
func CrossEntropy(z []float32, V, ld int, targets []int32, grad []float32, lambda float32, loss, lse []float32, s, e int) {
	for i := s; i < e; i++ {
		row := z[i*ld : i*ld+V]
		y := int(targets[i])
		var g float32
		if grad != nil {
			g = grad[i]
		}
		// with a gradient to write, keep e^(z−max) in the row for it
		l, li, sum := crossEntropyRow(row, y, grad != nil && y >= 0 && g != 0)
		lse[i], loss[i] = l, li
		if grad == nil {
			continue
		}
		if y < 0 || g == 0 {
			clear(row)
			continue
		}
		scaleTo(row, row, g*(1+2*lambda*l)/sum)
		row[y] -= g
	}
}

// CrossEntropyLoss is CrossEntropy's forward alone for rows [s, e): lse
// and loss as CrossEntropy computes them with a gradient weight, with the
// vectorised exponential-sum, so the values equal ForwardBackward's bit for
// bit. The rows of z are overwritten (they end up holding e^(z−max)).
func CrossEntropyLoss(z []float32, V int, targets []int32, loss, lse []float32, s, e int) {
	for i := s; i < e; i++ {
		lse[i], loss[i], _ = crossEntropyRow(z[i*V:(i+1)*V], int(targets[i]), true)
	}
}

// crossEntropyRow returns the log-sum-exp l of row, the loss l − row[y] (0
// when y < 0) and Σ e^(z−max). With inPlace the row is left holding the
// terms e^(z−max) (the vectorised exp-sum); else it is not written.
func crossEntropyRow(row []float32, y int, inPlace bool) (l, loss, sum float32) {
	mx := firstMaxRow(row)
	zy := float32(0)
	if y >= 0 {
		zy = row[y]
	}
	if inPlace {
		sum = expShiftSum(row, row, mx)
	} else {
		sum = expShiftSumOnly(row, mx)
	}
	l = mx + float32(math.Log(float64(sum)))
	if y >= 0 {
		loss = l - zy
	}
	return l, loss, sum
}

// -------------------------------------------------------------------- utils

// Expf is a fast float32 e^x (relative error below 3e-7): x = k·ln2 + r
// with |r| ≤ ln2/2, e^r by a degree-7 Taylor polynomial, 2^k through the
// exponent bits. Inputs at or below −87.3 give 0 (e^−87.3 ≈ 1.2e−38), above
// 88 give +Inf (e^88 ≈ 1.7e38 is the largest value returned), NaN stays NaN.
func Expf(x float32) float32 {
	if !(x > -87.3) {
		if x != x {
			return x
		}
		return 0
	}
	if x > 88 {
		return float32(math.Inf(1))
	}
	return expCore(x)
}

const (
	log2e    = 1.44269504088896341
	ln2hi    = 0.693359375
	ln2lo    = -2.12194440e-4
	expMagic = 12582912 // 1.5·2²³: adding it rounds to an integer
)

// expCore is Expf without the range checks: x must lie in (−87.3, 88].
func expCore(x float32) float32 {
	t := x*log2e + expMagic
	kf := t - expMagic
	k := int32(math.Float32bits(t)) - 0x4B400000
	r := x - kf*ln2hi - kf*ln2lo
	p := ((((((r*(1.0/5040)+1.0/720)*r+1.0/120)*r+1.0/24)*r+1.0/6)*r+0.5)*r+1)*r + 1
	return p * math.Float32frombits(uint32(k+127)<<23)
}

// expShiftSumGo writes dst[i] = e^(src[i]−mx) and returns their sum; every
// src[i] must be ≤ mx (so the arguments are ≤ 0). dst may alias src.
func expShiftSumGo(dst, src []float32, mx float32) float32 {
	dst = dst[:len(src)]
	var sum float32
	for i, v := range src {
		d := max(v-mx, -87)
		// e^d, inlined expCore (e^−87 ≈ 1.6e−38 stands in for smaller values)
		q := d*log2e + expMagic
		kf := q - expMagic
		k := int32(math.Float32bits(q)) - 0x4B400000
		r := d - kf*ln2hi - kf*ln2lo
		p := ((((((r*(1.0/5040)+1.0/720)*r+1.0/120)*r+1.0/24)*r+1.0/6)*r+0.5)*r+1)*r + 1
		e := p * math.Float32frombits(uint32(k+127)<<23)
		dst[i] = e
		sum += e
	}
	return sum
}

// expShiftSumOnly returns Σ e^(src[i]−mx) without storing the terms.
func expShiftSumOnly(src []float32, mx float32) float32 {
	var sum float32
	for _, v := range src {
		d := max(v-mx, -87)
		q := d*log2e + expMagic
		kf := q - expMagic
		k := int32(math.Float32bits(q)) - 0x4B400000
		r := d - kf*ln2hi - kf*ln2lo
		p := ((((((r*(1.0/5040)+1.0/720)*r+1.0/120)*r+1.0/24)*r+1.0/6)*r+0.5)*r+1)*r + 1
		sum += p * math.Float32frombits(uint32(k+127)<<23)
	}
	return sum
}
