package ops

import (
	"math"
	"math/rand/v2"
	"testing"
)

// elemInputs returns n values mixing ordinary magnitudes with zeros,
// signed zeros, huge and subnormal values and infinities.
func elemInputs(r *rand.Rand, n int) []float32 {
	special := []float32{0, float32(math.Copysign(0, -1)), 3e38, -3e38, 1e-40, -1e-40, float32(math.Inf(1)), float32(math.Inf(-1))}
	x := make([]float32, n)
	for i := range x {
		if r.IntN(10) == 0 {
			x[i] = special[r.IntN(len(special))]
		} else {
			x[i] = float32(r.NormFloat64() * math.Exp(r.NormFloat64()*3))
		}
	}
	return x
}

func sameBits(t *testing.T, what string, n int, got, want []float32) {
	t.Helper()
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) && !(got[i] != got[i] && want[i] != want[i]) {
			t.Fatalf("%s, n=%d: [%d] = %v (vector), %v (Go)", what, n, i, got[i], want[i])
		}
	}
}

// TestElemVectorMatchesGo checks the AVX-512 and AVX2 elementwise kernels
// against the Go loops bit for bit, on lengths around the 8-lane boundaries (vector body
// plus Go tail) and a model-sized row.
func TestElemVectorMatchesGo(t *testing.T) {
	if !useElemAVX2 {
		t.Skip("no AVX2")
	}
	r := rand.New(rand.NewPCG(7, 7))
	for _, n := range []int{0, 1, 7, 8, 9, 15, 16, 17, 23, 24, 25, 31, 32, 33, 40, 64, 100, 384, 768} {
		g, u, d, sg := elemInputs(r, n), elemInputs(r, n), elemInputs(r, n), make([]float32, n)
		for i := range sg {
			sg[i] = r.Float32()
		}
		run := func(vec bool) (h, dg, du, a, b, y []float32) {
			old := useElemAVX2
			useElemAVX2 = vec
			defer func() { useElemAVX2 = old }()
			h, dg, du, y = make([]float32, n), make([]float32, n), make([]float32, n), make([]float32, n)
			rmsnormScale(y, g, u, 0.731)
			swigluFwdRow(h, g, sg, u)
			swigluBackRow(dg, du, d, g, u, sg)
			a, b = append([]float32(nil), g...), append([]float32(nil), u...)
			ropeRow(a, b, d, sg, 1)
			ropeRow(a, b, sg, d, -1)
			return
		}
		h0, dg0, du0, a0, b0, y0 := run(false)
		// the AVX-512 kernels where the CPU has them, then the AVX2 ones
		for _, w512 := range []bool{true, false} {
			old := useElem512
			useElem512 = useElem512 && w512
			h1, dg1, du1, a1, b1, y1 := run(true)
			useElem512 = old
			sameBits(t, "rmsnorm scale", n, y1, y0)
			sameBits(t, "swiglu forward", n, h1, h0)
			sameBits(t, "swiglu backward dg", n, dg1, dg0)
			sameBits(t, "swiglu backward du", n, du1, du0)
			sameBits(t, "rope a", n, a1, a0)
			sameBits(t, "rope b", n, b1, b0)
		}
	}
}

// TestMaxScaleVectorMatchesGo checks maxRow, firstMaxRow and scaleTo against
// the scalar loops bit for bit, including NaNs, infinities and ±0 ties in
// the vector part and in the tail.
func TestMaxScaleVectorMatchesGo(t *testing.T) {
	if !useElemAVX2 {
		t.Skip("no AVX2")
	}
	r := rand.New(rand.NewPCG(9, 9))
	nan := float32(math.NaN())
	negz := float32(math.Copysign(0, -1))
	type tc struct {
		name string
		v    []float32
	}
	cases := []tc{
		{"zeros -0 first", []float32{negz, 0, negz, 0, 0, 0, 0, 0, negz}},
		{"zeros +0 first", []float32{0, negz, negz, negz, negz, negz, negz, negz, negz, 0}},
		{"negative with -0 tail", append(make([]float32, 0), -1, -2, -3, -4, -5, -6, -7, -8, negz, 0)},
		{"NaN first", []float32{nan, 1, 2, 3, 4, 5, 6, 7, 8}},
		{"NaN in vector part", []float32{1, 2, nan, 3, 4, 5, 6, 7, 0.5}},
		{"NaN in tail", []float32{1, 2, 3, 4, 5, 6, 7, 8, nan, 9}},
		{"+Inf", []float32{1, float32(math.Inf(1)), 3, 4, 5, 6, 7, 8}},
		{"all -Inf", []float32{float32(math.Inf(-1)), float32(math.Inf(-1)), float32(math.Inf(-1)), float32(math.Inf(-1)), float32(math.Inf(-1)), float32(math.Inf(-1)), float32(math.Inf(-1)), float32(math.Inf(-1))}},
	}
	for _, n := range []int{1, 7, 8, 9, 16, 33, 256, 8192} {
		cases = append(cases, tc{"random", elemInputs(r, n)})
	}
	// long rows: the four-accumulator part of the vector loop
	for _, at := range []int{9, 40, 77, 130} {
		v := elemInputs(r, 139)
		v[at] = nan
		cases = append(cases, tc{"NaN in the unrolled part", v})
		w := make([]float32, 139)
		for i := range w {
			w[i] = -float32(i + 1)
		}
		w[at] = negz
		w[at/2] = 0
		cases = append(cases, tc{"zero tie in the unrolled part", w})
		x := make([]float32, 139)
		for i := range x {
			x[i] = -float32(i + 1)
		}
		x[at] = 5
		cases = append(cases, tc{"maximum in the unrolled part", x})
	}
	for _, c := range cases {
		got1, got2 := maxRow(c.v), firstMaxRow(c.v)
		want1, want2 := maxRowGo(c.v), firstMaxRowGo(c.v)
		sameBits(t, c.name+": maxRow", len(c.v), []float32{got1}, []float32{want1})
		sameBits(t, c.name+": firstMaxRow", len(c.v), []float32{got2}, []float32{want2})
		for _, s := range []float32{0.37, -3, 0} {
			d1, d0 := make([]float32, len(c.v)), make([]float32, len(c.v))
			scaleTo(d1, c.v, s)
			scaleToGo(d0, c.v, s)
			sameBits(t, c.name+": scaleTo", len(c.v), d1, d0)
		}
	}
}

// TestDSRowVectorMatchesGo checks dsRow's AVX2 body against dsRowGo bit
// for bit on ragged lengths.
func TestDSRowVectorMatchesGo(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 1))
	for _, n := range []int{1, 7, 8, 9, 16, 31, 33, 256} {
		p, dp := elemInputs(r, n), elemInputs(r, n)
		a, b := append([]float32(nil), dp...), append([]float32(nil), dp...)
		dot := float32(r.NormFloat64())
		dsRow(a, p, dot)
		dsRowGo(b, p, dot)
		sameBits(t, "dsRow", n, a, b)
	}
}

// TestExpShiftSum512MatchesAVX2: the 16-lane exponential-sum gives the
// 8-lane kernel's terms and sum bit for bit, for lengths with and without
// a last block of 8 and a tail (masked there, Go in the 8-lane path),
// and for rows shorter than 8 (all tail), as the attention softmax's rows
// at short context are.
func TestExpShiftSum512MatchesAVX2(t *testing.T) {
	if !useExpAVX512 {
		t.Skip("no AVX-512")
	}
	r := rand.New(rand.NewPCG(12, 5))
	for _, n := range []int{1, 2, 3, 5, 7, 8, 9, 15, 16, 17, 23, 24, 31, 33, 40, 63, 64, 255, 256, 8192, 8199} {
		src := make([]float32, n)
		for i := range src {
			src[i] = float32(r.NormFloat64() * 8)
		}
		src[n/3] = -500 // clamps at the exponent's floor
		mx := firstMaxRowGo(src)
		run := func(wide bool) ([]float32, float32) {
			old := useExpAVX512
			useExpAVX512 = wide
			defer func() { useExpAVX512 = old }()
			d := make([]float32, n+16)
			for i := n; i < len(d); i++ {
				d[i] = 7 // past the row: never written (the masked tail)
			}
			s := expShiftSum(d[:n], src, mx)
			for i := n; i < len(d); i++ {
				if d[i] != 7 {
					t.Fatalf("n=%d wide=%v: dst[%d] = %v written past the row", n, wide, i, d[i])
				}
			}
			return d[:n], s
		}
		d16, s16 := run(true)
		d8, s8 := run(false)
		sameBits(t, "exp terms", n, d16, d8)
		sameBits(t, "exp sum", n, []float32{s16}, []float32{s8})
	}
}

// TestSigmoid512MatchesAVX2: the 16-lane sigmoid equals the 8-lane one
// bit for bit (block of 16, last block of 8, Go tail; clamped inputs).
func TestSigmoid512MatchesAVX2(t *testing.T) {
	if !useExpAVX512 {
		t.Skip("no AVX-512")
	}
	r := rand.New(rand.NewPCG(13, 5))
	for _, n := range []int{8, 9, 16, 23, 24, 31, 32, 768, 1539} {
		src := elemInputs(r, n)
		run := func(wide bool) []float32 {
			old := useExpAVX512
			useExpAVX512 = wide
			defer func() { useExpAVX512 = old }()
			d := make([]float32, n)
			sigmoidRow(d, src)
			return d
		}
		sameBits(t, "sigmoid", n, run(true), run(false))
	}
}

// TestRMSNormBackwardGoMatchesRowByRow is TestRMSNormBackwardMatchesRowByRow
// with the AVX2 kernels switched off (the Go loops other CPUs run).
func TestRMSNormBackwardGoMatchesRowByRow(t *testing.T) {
	old := useElemAVX2
	useElemAVX2 = false
	defer func() { useElemAVX2 = old }()
	checkRMSBackwardMatchesRef(t)
}

// TestExpShiftSumShortRowsMatchGo: rows of 1–7 terms, which expShiftSum
// ran in Go before the masked AVX-512 tail, give expShiftSumGo's terms
// and sum bit for bit over many random rows (shifts down to the clamp,
// a NaN and infinities among the inputs): the tail's unfused arithmetic
// is the Go loop's, not the FMA blocks'.
func TestExpShiftSumShortRowsMatchGo(t *testing.T) {
	if !useExpAVX512 {
		t.Skip("no AVX-512")
	}
	r := rand.New(rand.NewPCG(21, 3))
	special := []float32{-500, float32(math.Inf(-1)), float32(math.NaN()), 0, float32(math.Copysign(0, -1)), 1e-40}
	for trial := 0; trial < 4000; trial++ {
		n := 1 + trial%7
		src := make([]float32, n)
		for i := range src {
			src[i] = float32(r.NormFloat64() * math.Exp(r.NormFloat64()*2))
			if r.IntN(12) == 0 {
				src[i] = special[r.IntN(len(special))]
			}
		}
		mx := firstMaxRowGo(src)
		got, want := make([]float32, n), make([]float32, n)
		gs := expShiftSumAVX512All(got, src, mx)
		ws := expShiftSumGo(want, src, mx)
		sameBits(t, "short-row exp terms", n, got, want)
		sameBits(t, "short-row exp sum", n, []float32{gs}, []float32{ws})
	}
}

// TestRoPERowsMatchRowByRow checks the one-call AVX-512 rotation
// (ropeRowsAVX512) against rope's row-by-row path bit for bit: head widths
// whose half is 8, 16, 24 and 32 floats (16-lane blocks and a last 8),
// row ranges that start mid-sequence and wrap past T, a row offset and
// stride, both signs, and inputs with zeros, infinities and subnormals.
func TestRoPERowsMatchRowByRow(t *testing.T) {
	if !useElem512 || !useElemAVX2 {
		t.Skip("no AVX-512")
	}
	r := rand.New(rand.NewPCG(11, 3))
	type tc struct{ T, nh, hd, off, s, e int }
	cases := []tc{
		{64, 8, 32, 0, 0, 384}, // shakespeare-char: 6×64 rows, q and k heads of 32
		{64, 4, 32, 128, 0, 384},
		{5, 3, 16, 7, 3, 13},
		{7, 2, 48, 1, 0, 7},
		{9, 1, 64, 0, 8, 10},
		{4, 5, 16, 3, 1, 2},
		{3, 2, 8, 0, 0, 6}, // half 4: the row loop either way
	}
	for _, c := range cases {
		stride := c.off + c.nh*c.hd + 5
		half := c.hd / 2
		cos, sin := elemInputs(r, c.T*half), elemInputs(r, c.T*half)
		x := elemInputs(r, c.e*stride)
		for _, sign := range []float32{1, -1} {
			run := func(vec bool) []float32 {
				old := useElem512
				useElem512 = vec
				defer func() { useElem512 = old }()
				y := append([]float32(nil), x...)
				rope(y, cos, sin, c.T, stride, c.off, c.nh, c.hd, c.s, c.e, sign)
				return y
			}
			sameBits(t, "rope rows", c.e-c.s, run(true), run(false))
		}
	}
}

// TestRMSNormSums16MatchGo checks RMSNormForward with the 16-row AVX-512
// sums (sumSquares16AVX512) against its Go path bit for bit: outputs and
// rstd, for row ranges around 16 (the 4-row and 1-row loops after them),
// widths that are and are not multiples of 16, and rows holding zeros,
// subnormals, huge values, infinities and NaNs.
func TestRMSNormSums16MatchGo(t *testing.T) {
	if !useElem512 || !useElemAVX2 {
		t.Skip("no AVX-512")
	}
	r := rand.New(rand.NewPCG(21, 2))
	for _, C := range []int{16, 32, 48, 100, 128} {
		for _, rows := range [][2]int{{0, 16}, {0, 15}, {0, 17}, {3, 40}, {0, 384}} {
			s, e := rows[0], rows[1]
			x := elemInputs(r, e*C)
			for i := range x {
				if r.IntN(3) == 0 { // mostly ordinary values, so most rows are finite
					continue
				}
				x[i] = float32(r.NormFloat64())
			}
			if e > 20 {
				x[5*C+3] = float32(math.NaN())
			}
			w := elemInputs(r, C)
			run := func(vec bool) ([]float32, []float32) {
				old := useElem512
				useElem512 = vec
				defer func() { useElem512 = old }()
				out, rstd := make([]float32, e*C), make([]float32, e)
				RMSNormForward(out, rstd, x, w, C, 1e-5, s, e)
				return out, rstd
			}
			o1, r1 := run(true)
			o0, r0 := run(false)
			sameBits(t, "rmsnorm rstd", C, r1, r0)
			sameBits(t, "rmsnorm out", C, o1, o0)
		}
	}
}

// TestRMSNormBackwardAVX2MatchesRowByRow: with the AVX-512 kernels off
// (AVX2 terms and apply, seqSums in Go), the grouped backward still
// matches the row-by-row reference bit for bit.
func TestRMSNormBackwardAVX2MatchesRowByRow(t *testing.T) {
	old := useElem512
	useElem512 = false
	defer func() { useElem512 = old }()
	checkRMSBackwardMatchesRef(t)
}
