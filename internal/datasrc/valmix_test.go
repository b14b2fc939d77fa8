package datasrc

import "testing"

// TestValMixLoss: the weighted mean over the trained sources with
// validation tokens; the token-weighted mean over every source when no
// trained source has any, or without weights; NaN with no tokens at all.
func TestValMixLoss(t *testing.T) {
	for _, c := range []struct {
		name       string
		w          []float64
		sums, toks []float64
		want       float64
		tok        int
	}{
		{"held-out source left out", []float64{1, 0}, []float64{4, 30}, []float64{2, 10}, 2, 2},
		{"weighted mean", []float64{3, 1}, []float64{4, 30}, []float64{2, 10}, (3*2 + 3) / 4.0, 12},
		{"no trained validation tokens", []float64{0, 1}, []float64{10, 0}, []float64{5, 0}, 2, 5},
		{"no weights", nil, []float64{4, 30}, []float64{2, 10}, 34 / 12.0, 12},
	} {
		v := &ValMix{w: c.w, sums: c.sums, toks: c.toks}
		if got, tok := v.Loss(); got != c.want || tok != c.tok {
			t.Errorf("%s: %g over %d tokens, want %g over %d", c.name, got, tok, c.want, c.tok)
		}
	}
	v := &ValMix{sums: make([]float64, 2), toks: make([]float64, 2)}
	if got, tok := v.Loss(); got == got || tok != 0 {
		t.Errorf("no tokens: %g over %d, want NaN over 0", got, tok)
	}
	v.Add(1, 6, 3)
	if got, tok := v.Loss(); got != 2 || tok != 3 {
		t.Errorf("after Add: %g over %d, want 2 over 3", got, tok)
	}
}
