package ops

import (
	"math"
	"math/rand/v2"
	"testing"
)

func randVec(r *rand.Rand, n int, s float32) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(r.NormFloat64()) * s
	}
	return v
}

// dotR is the scalar test functional L = Σ r_i·y_i (so ∂L/∂y = r).
func dotR(r, y []float32) float64 {
	var s float64
	for i := range r {
		s += float64(r[i]) * float64(y[i])
	}
	return s
}

// fdCheck compares grad (analytic ∂L/∂x) with float32 central differences
// of loss() over every entry of x (or a sample of at most 40).
func fdCheck(t *testing.T, name string, x, grad []float32, loss func() float64) {
	t.Helper()
	const h = 1e-2
	step := 1
	if len(x) > 40 {
		step = len(x) / 40
	}
	for i := 0; i < len(x); i += step {
		old := x[i]
		x[i] = old + h
		lp := loss()
		x[i] = old - h
		lm := loss()
		x[i] = old
		num := (lp - lm) / (2 * h)
		ana := float64(grad[i])
		if math.Abs(num-ana) > 2e-2*math.Abs(ana)+2e-3 {
			t.Errorf("%s[%d]: analytic %.6g numeric %.6g", name, i, ana, num)
		}
	}
}

func TestExpf(t *testing.T) {
	worst := 0.0
	for x := float32(-87); x < 88; x += 0.0137 {
		got := float64(Expf(x))
		want := math.Exp(float64(x))
		if rel := math.Abs(got-want) / want; rel > worst {
			worst = rel
		}
	}
	if worst > 3e-7 {
		t.Fatalf("Expf max relative error %g", worst)
	}
	if Expf(-100) != 0 || !math.IsInf(float64(Expf(100)), 1) {
		t.Fatal("Expf limits")
	}
}

func TestEmbeddingGrad(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	V, C := 5, 4
	tokens := []int32{0, 3, 3, 1, 4, 3}
	N := len(tokens)
	wte := randVec(r, V*C, 1)
	rr := randVec(r, N*C, 1)
	out := make([]float32, N*C)
	loss := func() float64 { EmbeddingForward(out, tokens, wte, C, 0, N); return dotR(rr, out) }
	dw := make([]float32, V*C)
	EmbeddingBackward(dw, rr, tokens, C)
	fdCheck(t, "dwte", wte, dw, loss)
}

func TestRMSNormGrad(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 1))
	N, C := 6, 8 // four rows at a time, then two one by one
	x := randVec(r, N*C, 1)
	w := randVec(r, C, 1)
	rr := randVec(r, N*C, 1)
	out, rstd := make([]float32, N*C), make([]float32, N)
	loss := func() float64 { RMSNormForward(out, rstd, x, w, C, 1e-5, 0, N); return dotR(rr, out) }
	loss()
	dx, dw := make([]float32, N*C), make([]float32, C)
	RMSNormBackward(dx, dw, rr, x, w, rstd, C, 0, N)
	fdCheck(t, "dx", x, dx, loss)
	fdCheck(t, "dw", w, dw, loss)
}

// TestRMSNormRowsBitIdentical: the four-rows-at-a-time forward and
// backward give exactly what one row at a time gives.
func TestRMSNormRowsBitIdentical(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 3))
	for _, tc := range []struct{ N, C int }{{4, 1}, {9, 16}, {13, 256}} {
		N, C := tc.N, tc.C
		x, w, dy := randVec(r, N*C, 1), randVec(r, C, 1), randVec(r, N*C, 1)
		out, rstd := make([]float32, N*C), make([]float32, N)
		out1, rstd1 := make([]float32, N*C), make([]float32, N)
		RMSNormForward(out, rstd, x, w, C, 1e-5, 0, N)
		for i := range N {
			RMSNormForward(out1, rstd1, x, w, C, 1e-5, i, i+1)
		}
		dx, dw := randVec(r, N*C, 1), make([]float32, C)
		dx1, dw1 := append([]float32(nil), dx...), make([]float32, C)
		RMSNormBackward(dx, dw, dy, x, w, rstd, C, 0, N)
		for i := range N {
			RMSNormBackward(dx1, dw1, dy, x, w, rstd1, C, i, i+1)
		}
		for _, p := range []struct {
			name      string
			got, want []float32
		}{{"out", out, out1}, {"rstd", rstd, rstd1}, {"dx", dx, dx1}, {"dw", dw, dw1}} {
			for i := range p.got {
				if math.Float32bits(p.got[i]) != math.Float32bits(p.want[i]) {
					t.Fatalf("N=%d C=%d %s[%d] = %g, one row at a time %g", N, C, p.name, i, p.got[i], p.want[i])
				}
			}
		}
	}
}

// TestHeadRMSNormHeadsBitIdentical: QK-norm over nh heads of a row (four
// at a time) gives what normalising each head on its own gives.
func TestHeadRMSNormHeadsBitIdentical(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 3))
	N, nh, hd, stride, off := 5, 6, 32, 200, 4
	src, w := randVec(r, N*stride, 1), randVec(r, hd, 1)
	dst, rstd := make([]float32, N*stride), make([]float32, N*nh)
	HeadRMSNormForward(dst, src, rstd, w, stride, off, nh, hd, 1e-6, 0, N)
	d := randVec(r, N*stride, 1)
	d1 := append([]float32(nil), d...)
	dw, dw1 := make([]float32, hd), make([]float32, hd)
	HeadRMSNormBackward(d, src, rstd, w, dw, stride, off, nh, hd, 0, N)
	dst1 := make([]float32, N*stride)
	for n := range N {
		for h := range nh {
			o := off + h*hd
			r1 := make([]float32, N)
			HeadRMSNormForward(dst1, src, r1, w, stride, o, 1, hd, 1e-6, n, n+1)
			if math.Float32bits(r1[n]) != math.Float32bits(rstd[n*nh+h]) {
				t.Fatalf("row %d head %d: rstd %v, alone %v", n, h, rstd[n*nh+h], r1[n])
			}
			HeadRMSNormBackward(d1, src, r1, w, dw1, stride, o, 1, hd, n, n+1)
		}
	}
	for _, p := range []struct {
		name      string
		got, want []float32
	}{{"dst", dst, dst1}, {"d", d, d1}, {"dw", dw, dw1}} {
		for i := range p.got {
			if math.Float32bits(p.got[i]) != math.Float32bits(p.want[i]) {
				t.Fatalf("%s[%d] = %v, head by head %v", p.name, i, p.got[i], p.want[i])
			}
		}
	}
}

func TestHeadRMSNormGrad(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 1))
	N, nh, hd, stride, off := 3, 5, 6, 37, 3 // four heads at a time, then one
	src := randVec(r, N*stride, 1)
	w := randVec(r, hd, 1)
	rr := randVec(r, N*stride, 1)
	// only the normalised columns enter L
	mask := func(v []float32) {
		for n := 0; n < N; n++ {
			for j := 0; j < stride; j++ {
				if j < off || j >= off+nh*hd {
					v[n*stride+j] = 0
				}
			}
		}
	}
	mask(rr)
	dst, rstd := make([]float32, N*stride), make([]float32, N*nh)
	loss := func() float64 {
		HeadRMSNormForward(dst, src, rstd, w, stride, off, nh, hd, 1e-6, 0, N)
		return dotR(rr, dst)
	}
	loss()
	d := append([]float32(nil), rr...)
	dw := make([]float32, hd)
	HeadRMSNormBackward(d, src, rstd, w, dw, stride, off, nh, hd, 0, N)
	mask(d)
	fdCheck(t, "dsrc", src, d, loss)
	fdCheck(t, "dw", w, dw, loss)
}

func TestRoPEGradAndRelative(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 1))
	T, nh, hd, stride := 5, 2, 8, 16
	N := 2 * T
	cos, sin := make([]float32, T*hd/2), make([]float32, T*hd/2)
	RoPETables(cos, sin, T, hd, 100)
	x := randVec(r, N*stride, 1)
	rr := randVec(r, N*stride, 1)
	y := make([]float32, len(x))
	loss := func() float64 {
		copy(y, x)
		RoPEForward(y, cos, sin, T, stride, 0, nh, hd, 0, N)
		return dotR(rr, y)
	}
	d := append([]float32(nil), rr...)
	RoPEBackward(d, cos, sin, T, stride, 0, nh, hd, 0, N)
	fdCheck(t, "dx", x, d, loss)

	// relative property: <R_p q, R_{p+k} k> depends only on k
	q, k := randVec(r, hd, 1), randVec(r, hd, 1)
	score := func(p, s int) float64 {
		a, b := make([]float32, T*hd), make([]float32, T*hd)
		copy(a[p*hd:], q)
		copy(b[s*hd:], k)
		RoPEForward(a, cos, sin, T, hd, 0, 1, hd, 0, T)
		RoPEForward(b, cos, sin, T, hd, 0, 1, hd, 0, T)
		return dotR(a[p*hd:(p+1)*hd], b[s*hd:(s+1)*hd])
	}
	if d := math.Abs(score(0, 2) - score(2, 4)); d > 1e-4 {
		t.Errorf("RoPE not relative: %g", d)
	}
}

// TestSwiGLUForwardWithoutSig: the forward-only SwiGLU (σ not kept,
// computed piece by piece) gives the training forward's h bit for bit.
func TestSwiGLUForwardWithoutSig(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 9))
	for _, F := range []int{1, 7, 256, 600, 768} {
		N := 3
		gu := randVec(r, N*2*F, 2)
		h, h0, sig := make([]float32, N*F), make([]float32, N*F), make([]float32, N*F)
		SwiGLUForward(h, sig, gu, F, 0, N)
		SwiGLUForward(h0, nil, gu, F, 0, N)
		for i := range h {
			if math.Float32bits(h[i]) != math.Float32bits(h0[i]) {
				t.Fatalf("F=%d: h[%d] = %v without sig, %v with", F, i, h0[i], h[i])
			}
		}
	}
}

func TestSwiGLUGrad(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 1))
	N, F := 3, 5
	gu := randVec(r, N*2*F, 2)
	rr := randVec(r, N*F, 1)
	h, sig := make([]float32, N*F), make([]float32, N*F)
	loss := func() float64 { SwiGLUForward(h, sig, gu, F, 0, N); return dotR(rr, h) }
	loss()
	dgu := make([]float32, N*2*F)
	SwiGLUBackward(dgu, rr, gu, sig, F, 0, N)
	fdCheck(t, "dgu", gu, dgu, loss)
}

func TestResidualGrad(t *testing.T) {
	r := rand.New(rand.NewPCG(6, 1))
	a, b, rr := randVec(r, 7, 1), randVec(r, 7, 1), randVec(r, 7, 1)
	out := make([]float32, 7)
	loss := func() float64 { ResidualForward(out, a, b, 0, 7); return dotR(rr, out) }
	da, db := make([]float32, 7), make([]float32, 7)
	ResidualBackward(da, db, rr, 0, 7)
	fdCheck(t, "da", a, da, loss)
	fdCheck(t, "db", b, db, loss)
}

func TestMatmulGrad(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 1))
	N, in, out := 4, 5, 3
	x, w := randVec(r, N*in, 1), randVec(r, out*in, 1)
	rr := randVec(r, N*out, 1)
	y := make([]float32, N*out)
	loss := func() float64 { MatmulForward(y, x, w, N, in, out, false); return dotR(rr, y) }
	dx, dw := make([]float32, N*in), make([]float32, out*in)
	MatmulBackward(dx, dw, rr, x, w, N, in, out, false)
	fdCheck(t, "dx", x, dx, loss)
	fdCheck(t, "dw", w, dw, loss)
}

func TestCrossEntropyGrad(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 1))
	N, V := 4, 7
	z := randVec(r, N*V, 2)
	targets := []int32{1, -1, 6, 0}
	weights := []float32{0.25, 0.25, 0.5, 0}
	const lambda = 0.05
	loss, lse := make([]float32, N), make([]float32, N)
	obj := func() float64 {
		CrossEntropy(z, V, V, targets, nil, lambda, loss, lse, 0, N)
		var s float64
		for i := range loss {
			if targets[i] >= 0 {
				s += float64(weights[i]) * (float64(loss[i]) + lambda*float64(lse[i])*float64(lse[i]))
			}
		}
		return s
	}
	obj()
	// reference value for row 0
	var se float64
	for _, v := range z[:V] {
		se += math.Exp(float64(v))
	}
	if want := math.Log(se) - float64(z[1]); math.Abs(want-float64(loss[0])) > 1e-5 {
		t.Fatalf("loss %g want %g", loss[0], want)
	}
	dz := append([]float32(nil), z...)
	CrossEntropy(dz, V, V, targets, weights, lambda, make([]float32, N), make([]float32, N), 0, N)
	fdCheck(t, "dz", z, dz, obj)
}

// TestCrossEntropyLossMatchesTraining: the forward-only loss (which on
// AVX-512 does not write the terms back) gives CrossEntropy's lse and
// loss with a gradient bit for bit, on vocabularies with and without a
// tail past the vector blocks, and an ignored target (loss 0).
func TestCrossEntropyLossMatchesTraining(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 4))
	for _, V := range []int{5, 16, 24, 8192, 8199} {
		N := 4
		z := randVec(r, N*V, 4)
		targets := []int32{0, int32(V - 1), -1, int32(V / 2)}
		z2 := append([]float32(nil), z...)
		loss, lse := make([]float32, N), make([]float32, N)
		loss2, lse2 := make([]float32, N), make([]float32, N)
		CrossEntropyLoss(z, V, targets, loss, lse, 0, N)
		grad := []float32{1, 0.5, 1, 2}
		CrossEntropy(z2, V, V, targets, grad, 0, loss2, lse2, 0, N)
		for i := range N {
			// (an ignored row's lse comes from the scalar sum in training)
			if math.Float32bits(loss[i]) != math.Float32bits(loss2[i]) || targets[i] >= 0 && math.Float32bits(lse[i]) != math.Float32bits(lse2[i]) {
				t.Fatalf("V=%d row %d: loss %v lse %v, training %v %v", V, i, loss[i], lse[i], loss2[i], lse2[i])
			}
		}
	}
}

// TestCrossEntropyRowStride: rows ld > V floats apart give the dense
// rows' loss, lse and gradient bit for bit, and the ld − V floats after
// each row are left as they were.
func TestCrossEntropyRowStride(t *testing.T) {
	r := rand.New(rand.NewPCG(22, 4))
	for _, V := range []int{7, 24, 8192} {
		const N, pad = 3, 16
		ld := V + pad
		dense := randVec(r, N*V, 3)
		strided := make([]float32, N*ld)
		for i := range strided {
			strided[i] = float32(i) // the padding's sentinel values
		}
		for i := range N {
			copy(strided[i*ld:], dense[i*V:(i+1)*V])
		}
		targets := []int32{0, -1, int32(V - 1)}
		grad := []float32{0.5, 1, 2}
		lossA, lseA, lossB, lseB := make([]float32, N), make([]float32, N), make([]float32, N), make([]float32, N)
		CrossEntropy(dense, V, V, targets, grad, 0.01, lossA, lseA, 0, N)
		CrossEntropy(strided, V, ld, targets, grad, 0.01, lossB, lseB, 0, N)
		for i := range N {
			if math.Float32bits(lossA[i]) != math.Float32bits(lossB[i]) || math.Float32bits(lseA[i]) != math.Float32bits(lseB[i]) {
				t.Fatalf("V=%d row %d: loss %v lse %v with stride %d, dense %v %v", V, i, lossB[i], lseB[i], ld, lossA[i], lseA[i])
			}
			for j := range V {
				if math.Float32bits(strided[i*ld+j]) != math.Float32bits(dense[i*V+j]) {
					t.Fatalf("V=%d: dz[%d][%d] = %v with stride %d, dense %v", V, i, j, strided[i*ld+j], ld, dense[i*V+j])
				}
			}
			for j := V; j < ld; j++ {
				if o := i*ld + j; strided[o] != float32(o) {
					t.Fatalf("V=%d: padding after row %d written (%v)", V, i, strided[o])
				}
			}
		}
	}
}

func TestAttentionGrad(t *testing.T) {
	for _, tc := range []struct {
		name  string
		seg   []int32
		block int
		vec   bool
	}{
		{"causal", nil, 0, false},
		{"causal-vec", nil, 0, true},
		{"docmask-blocked", []int32{0, 0, 1, 1, 1, 4, 4, 4, 4, 9}, 2, true}, // documents in order: the vector rows
		{"docmask-scalar", []int32{0, 0, 1, 1, 1, 4, 4, 4, 4, 9}, 0, false},
		// a document resumes after another: that sequence's rows take the scalar loop
		{"docmask-interleaved", []int32{0, 1, 0, 1, 1, 3, 2, 3, 3, 2}, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(9, 1))
			B, T, H, KV, hd := 2, 5, 4, 2, 4
			d := AttnDims{B: B, T: T, H: H, KVH: KV, HD: hd, Stride: (H + 2*KV) * hd,
				QOff: 0, KOff: H * hd, VOff: (H + KV) * hd, OutStride: H * hd}
			a := &Attention{D: d, Seg: tc.seg, Block: tc.block}
			if tc.vec {
				a.Scratch = make([]float32, B*H*T)
			}
			N := B * T
			qkv := randVec(r, N*d.Stride, 1.5)
			rr := randVec(r, N*d.OutStride, 1)
			out := make([]float32, N*d.OutStride)
			att := make([]float32, B*H*T*T)
			rowMax, rowEnt := make([]float32, B*H*T), make([]float32, B*H*T)
			loss := func() float64 { a.Forward(out, att, qkv, rowMax, rowEnt); return dotR(rr, out) }
			loss()
			// probabilities: rows sum to 1, masked entries are 0
			for row := 0; row < B*H*T; row++ {
				tt := row % T
				b := row / T / H
				var s float32
				for j := 0; j < T; j++ {
					p := att[row*T+j]
					if j > tt || (tc.seg != nil && tc.seg[b*T+j] != tc.seg[b*T+tt]) {
						if p != 0 {
							t.Fatalf("row %d masked p[%d]=%g", row, j, p)
						}
					}
					s += p
				}
				if math.Abs(float64(s-1)) > 1e-5 {
					t.Fatalf("row %d sums to %g", row, s)
				}
				if tt == 0 && rowEnt[row] > 1e-6 {
					t.Fatalf("first row entropy %g", rowEnt[row])
				}
			}
			dqkv := make([]float32, N*d.Stride)
			datt := make([]float32, len(att))
			a.Backward(dqkv, rr, qkv, att, datt)
			fdCheck(t, "dqkv", qkv, dqkv, loss)
		})
	}
}

// TestExpShiftSumTwins checks the dispatching expShiftSum (AVX2 where
// available) against the pure-Go twin on ragged lengths and extreme values.
func TestExpShiftSumTwins(t *testing.T) {
	r := rand.New(rand.NewPCG(10, 1))
	for _, n := range []int{1, 7, 8, 9, 16, 31, 33, 1000} {
		src := randVec(r, n, 20)
		src[0] = -200 // underflows to ~0
		mx := float32(3)
		for i := range src {
			src[i] = min(src[i], mx)
		}
		a, b := make([]float32, n), make([]float32, n)
		sa := expShiftSum(a, src, mx)
		sb := expShiftSumGo(b, src, mx)
		for i := range a {
			want := math.Exp(float64(src[i] - mx))
			if math.Abs(float64(a[i])-want) > 3e-7*want+1e-37 || math.Abs(float64(a[i]-b[i])) > 3e-7*float64(b[i])+1e-37 {
				t.Fatalf("n=%d i=%d: %g (go %g) want %g", n, i, a[i], b[i], want)
			}
		}
		if math.Abs(float64(sa-sb)) > 1e-6*float64(sb) {
			t.Fatalf("n=%d sums %g vs %g", n, sa, sb)
		}
	}
}

func TestSigmoidTwins(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 1))
	for _, n := range []int{1, 8, 13, 64, 1001} {
		src := randVec(r, n, 10)
		src[0] = 200
		if n > 1 {
			src[1] = -200
		}
		a, b := make([]float32, n), make([]float32, n)
		sigmoidRow(a, src)
		sigmoidRowGo(b, src)
		for i := range a {
			want := 1 / (1 + math.Exp(-float64(src[i])))
			if math.Abs(float64(a[i])-want) > 4e-7*want+1e-37 || math.Abs(float64(a[i]-b[i])) > 4e-7*float64(b[i])+1e-37 {
				t.Fatalf("n=%d i=%d x=%g: %g (go %g) want %g", n, i, src[i], a[i], b[i], want)
			}
		}
	}
}

// TestAttentionVitals checks the per-row max logit and entropy of both
// softmax paths against −Σ p·log p computed from the saved probabilities.
func TestAttentionVitals(t *testing.T) {
	r := rand.New(rand.NewPCG(12, 1))
	B, T, H, KV, hd := 1, 9, 2, 1, 4
	d := AttnDims{B: B, T: T, H: H, KVH: KV, HD: hd, Stride: (H + 2*KV) * hd,
		QOff: 0, KOff: H * hd, VOff: (H + KV) * hd, OutStride: H * hd}
	qkv := randVec(r, B*T*d.Stride, 2)
	for _, scratch := range [][]float32{nil, make([]float32, B*H*T)} {
		a := &Attention{D: d, Scratch: scratch}
		att := make([]float32, B*H*T*T)
		rowMax, rowEnt := make([]float32, B*H*T), make([]float32, B*H*T)
		a.Forward(make([]float32, B*T*d.OutStride), att, qkv, rowMax, rowEnt)
		for row := 0; row < B*H*T; row++ {
			var ent float64
			for _, p := range att[row*T : (row+1)*T] {
				if p > 0 {
					ent -= float64(p) * math.Log(float64(p))
				}
			}
			if math.Abs(ent-float64(rowEnt[row])) > 1e-5 {
				t.Fatalf("scratch=%v row %d: entropy %g want %g", scratch != nil, row, rowEnt[row], ent)
			}
			// the max logit: scale·q·k over j ≤ t
			tt, h := row%T, row/T%H
			best := math.Inf(-1)
			for j := 0; j <= tt; j++ {
				var s float64
				for i := 0; i < hd; i++ {
					s += float64(qkv[tt*d.Stride+h*hd+i]) * float64(qkv[j*d.Stride+d.KOff+i])
				}
				best = math.Max(best, s/math.Sqrt(float64(hd)))
			}
			if math.Abs(best-float64(rowMax[row])) > 1e-5 {
				t.Fatalf("row %d: max logit %g want %g", row, rowMax[row], best)
			}
		}
	}
}

// rmsBackwardRowRef is RMSNorm's backward written out one row and one
// column at a time, every operation rounded to float32 in order: the
// reference the grouped, vectorised rmsNormBackward must match bit for bit.
func rmsBackwardRowRef(dinp, dw, dout, inp, w, rstd []float32, C, s, e int, inPlace bool) {
	for i := s; i < e; i++ {
		dx, dy, x, r := dinp[i*C:(i+1)*C], dout[i*C:(i+1)*C], inp[i*C:(i+1)*C], rstd[i]
		var dot float32
		for j := range C {
			xh := float32(x[j] * r)
			dot += float32(float32(dy[j]*w[j]) * xh)
			dw[j] += float32(dy[j] * xh)
		}
		m := dot / float32(C)
		for j := range C {
			xh := float32(x[j] * r)
			g := r * (float32(dy[j]*w[j]) - float32(xh*m))
			if inPlace {
				dx[j] = g
			} else {
				dx[j] += g
			}
		}
	}
}

// checkRMSBackwardMatchesRef runs rmsNormBackward against rmsBackwardRowRef
// on row counts around the group of rmsBackRows, widths around the 8-lane
// vectors and past one rmsBackBlock, both accumulating and in place.
func checkRMSBackwardMatchesRef(t *testing.T) {
	t.Helper()
	r := rand.New(rand.NewPCG(11, 5))
	for _, N := range []int{1, 7, 8, 9, 16, 17, 40} {
		for _, C := range []int{1, 8, 13, 64, 128, 256, 519, 1030} {
			x, w, dy := randVec(r, N*C, 1), randVec(r, C, 1), randVec(r, N*C, 1)
			rstd := randVec(r, N, 1)
			for _, inPlace := range []bool{false, true} {
				dx, dw := randVec(r, N*C, 1), randVec(r, C, 1)
				if inPlace {
					dx = append([]float32(nil), dy...)
				}
				dx1, dw1 := append([]float32(nil), dx...), append([]float32(nil), dw...)
				dy1 := dy
				if inPlace { // dinp aliases dout
					rmsNormBackward(dx, dw, dx, x, w, rstd, C, 0, N, true)
					rmsBackwardRowRef(dx1, dw1, dx1, x, w, rstd, C, 0, N, true)
				} else {
					rmsNormBackward(dx, dw, dy, x, w, rstd, C, 0, N, false)
					rmsBackwardRowRef(dx1, dw1, dy1, x, w, rstd, C, 0, N, false)
				}
				for _, p := range []struct {
					name      string
					got, want []float32
				}{{"dx", dx, dx1}, {"dw", dw, dw1}} {
					for i := range p.got {
						if math.Float32bits(p.got[i]) != math.Float32bits(p.want[i]) {
							t.Fatalf("N=%d C=%d inPlace=%v: %s[%d] = %g, row by row %g", N, C, inPlace, p.name, i, p.got[i], p.want[i])
						}
					}
				}
			}
		}
	}
}

// TestRMSNormBackwardMatchesRowByRow: the grouped backward (16 rows'
// dots side by side, the elementwise halves vectorised where the CPU
// allows) is bit-identical to the plain row-by-row loop.
func TestRMSNormBackwardMatchesRowByRow(t *testing.T) { checkRMSBackwardMatchesRef(t) }

// TestEmbeddingBackwardAddsInRowOrder: repeated tokens add their rows into
// one gradient row in row order, bit for bit as a plain float32 loop does,
// for widths around the vector kernel's 8 and 32 lanes.
func TestEmbeddingBackwardAddsInRowOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 9))
	tokens := []int32{2, 0, 2, 2, 1, 0, 2}
	for _, C := range []int{1, 7, 8, 33, 256} {
		dout, dw := randVec(r, len(tokens)*C, 1), randVec(r, 3*C, 1)
		want := append([]float32(nil), dw...)
		for i, tok := range tokens {
			for j := range C {
				want[int(tok)*C+j] += dout[i*C+j]
			}
		}
		EmbeddingBackward(dw, dout, tokens, C)
		for i := range want {
			if math.Float32bits(dw[i]) != math.Float32bits(want[i]) {
				t.Fatalf("C=%d: dw[%d] = %g, want %g", C, i, dw[i], want[i])
			}
		}
	}
}
