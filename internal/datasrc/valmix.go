package datasrc

import "math"

// ValMix aggregates the per-source validation sums into val_loss: the
// weighted mean of the per-source losses of the sources with weight > 0 in
// the stage in force (the trained mixture, weighted as the trainer draws
// them), their tokens as val_tokens. A source of weight 0 (a held-out
// domain) is left out of val_loss — it is reported only as its
// slice_val_loss — so a domain the run never trains on cannot make val_loss
// "worse than uniform". Without weights (a source that does not implement
// MixWeigher), or when no trained source has validation tokens, val_loss is
// the token-weighted mean over every source.
type ValMix struct {
	w          []float64 // nil: token-weighted over every source
	sums, toks []float64
}

// NewValMix starts the aggregation for data step index dataIdx.
func NewValMix(d Source, dataIdx int) *ValMix {
	n := len(d.SourceNames())
	v := &ValMix{sums: make([]float64, n), toks: make([]float64, n)}
	if mw, ok := d.(MixWeigher); ok {
		if w := mw.MixWeights(dataIdx); len(w) == n {
			v.w = w
		}
	}
	return v
}

// Add records source src's summed loss over its tok validation tokens.
func (v *ValMix) Add(src int, sum float64, tok int) {
	v.sums[src] += sum
	v.toks[src] += float64(tok)
}

// Loss is val_loss and the tokens it counts.
func (v *ValMix) Loss() (float64, int) {
	if v.w != nil {
		var num, den, tok float64
		for s, w := range v.w {
			if w > 0 && v.toks[s] > 0 {
				num += w * v.sums[s] / v.toks[s]
				den += w
				tok += v.toks[s]
			}
		}
		if den > 0 {
			return num / den, int(tok)
		}
	}
	var sum, tok float64
	for s := range v.sums {
		sum += v.sums[s]
		tok += v.toks[s]
	}
	if tok == 0 {
		return math.NaN(), 0
	}
	return sum / tok, int(tok)
}
