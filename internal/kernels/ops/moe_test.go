package ops

import (
	"math"
	"slices"
	"testing"
)

func TestTopK(t *testing.T) {
	for _, tc := range []struct {
		name    string
		p, bias []float32
		k       int
		want    []int32
	}{
		{"plain", []float32{0.1, 0.4, 0.2, 0.3}, nil, 2, []int32{1, 3}},
		{"all", []float32{0.1, 0.4, 0.2, 0.3}, nil, 4, []int32{1, 3, 2, 0}},
		{"ties go to the lower index", []float32{0.25, 0.25, 0.25, 0.25}, nil, 3, []int32{0, 1, 2}},
		{"bias steers", []float32{0.1, 0.4, 0.2, 0.3}, []float32{0.5, 0, 0, 0}, 2, []int32{0, 1}},
		{"negative bias", []float32{0.1, 0.4, 0.2, 0.3}, []float32{0, -1, 0, 0}, 1, []int32{3}},
	} {
		sel := make([]int32, tc.k)
		TopK(sel, tc.p, tc.bias)
		if !slices.Equal(sel, tc.want) {
			t.Errorf("%s: got %v want %v", tc.name, sel, tc.want)
		}
	}
}

func TestSoftmaxRows(t *testing.T) {
	z := []float32{1, 2, 3, 1000, 1000, -1000}
	lse := make([]float32, 2)
	SoftmaxRows(z, lse, 3, 0, 2)
	want0 := math.Log(math.Exp(1) + math.Exp(2) + math.Exp(3))
	if math.Abs(float64(lse[0])-want0) > 1e-6 || math.Abs(float64(lse[1])-(1000+math.Log(2))) > 1e-3 {
		t.Errorf("lse %v, want %v and %v", lse, want0, 1000+math.Log(2))
	}
	for r := 0; r < 2; r++ {
		var s float32
		for _, v := range z[r*3 : r*3+3] {
			s += v
		}
		if math.Abs(float64(s)-1) > 1e-6 {
			t.Errorf("row %d sums to %g", r, s)
		}
	}
	if math.Abs(float64(z[2])-math.Exp(3-want0)) > 1e-6 || z[5] != 0 {
		t.Errorf("probs %v", z)
	}
}

// TestGatherScatter checks the dispatch round trip: gather token rows into
// expert blocks, scatter them back gated (and ungated, the gather's
// backward), with a dropped assignment.
func TestGatherScatter(t *testing.T) {
	const C, K = 2, 2
	x := []float32{1, 2, 3, 4, 5, 6} // 3 tokens
	// assignments (t, j): rows; token 1's second assignment is dropped
	row := []int32{2, 0, 3, -1, 1, 4}
	tok := []int32{0, 2, 0, 1, 2}
	xe := make([]float32, 5*C)
	GatherRows(xe, x, tok, C, 0, len(tok))
	if !slices.Equal(xe, []float32{1, 2, 5, 6, 1, 2, 3, 4, 5, 6}) {
		t.Fatalf("gather %v", xe)
	}
	gate := []float32{0.5, 0.25, 1, 9, 2, 3}
	out := make([]float32, 3*C)
	ScatterAddRows(out, xe, gate, row, K, C, 0, 3)
	// token 0: 0.5·x0 + 0.25·x0; token 1: 1·x1; token 2: 2·x2 + 3·x2
	want := []float32{0.75, 1.5, 3, 4, 25, 30}
	if !slices.Equal(out, want) {
		t.Fatalf("scatter %v want %v", out, want)
	}
	dy, dg := make([]float32, 5*C), make([]float32, 6)
	dout := []float32{1, 0, 0, 1, 1, 1}
	GateBackwardRows(dy, dg, dout, xe, gate, row, K, C, 0, len(row))
	if !slices.Equal(dg, []float32{1, 1, 4, 0, 11, 11}) {
		t.Errorf("dgate %v", dg)
	}
	if !slices.Equal(dy[2*C:3*C], []float32{0.5, 0}) || !slices.Equal(dy[4*C:5*C], []float32{3, 3}) {
		t.Errorf("dy %v", dy)
	}
	back := make([]float32, 3*C)
	ScatterAddRows(back, xe, nil, row, K, C, 0, 3)
	if !slices.Equal(back, []float32{2, 4, 3, 4, 10, 12}) {
		t.Errorf("ungated scatter %v", back)
	}
}
