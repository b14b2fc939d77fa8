package compare

import (
	"fmt"
	"math"
)

// verdict is the pair's one line: on val_loss at the common evaluation
// point when it has a noise estimate, else on the train loss window;
// "better"/"worse" only beyond 2 standard errors, else "no difference
// beyond noise".
func verdict(p *Pair) string {
	if p.Identical {
		return fmt.Sprintf("identical: %s repeats %s's train_loss_raw bit for bit at every step both have (up to step %d)", p.NameB, p.NameA, p.SharedStep)
	}
	var d *Delta
	for i := range p.Evals {
		if p.Evals[i].Metric == "val_loss" && p.Evals[i].StdErr != nil {
			d = &p.Evals[i]
		}
	}
	what, unit := "val", "nats"
	if d == nil && p.Train != nil && p.Train.StdErr != nil {
		d, what = p.Train, fmt.Sprintf("train loss (mean of the last %d steps)", p.Train.N)
	}
	if d == nil {
		return fmt.Sprintf("no verdict: too few evaluations and steps after the shared history to estimate the noise (%s vs %s)", p.NameB, p.NameA)
	}
	at := "at " + Tokens(max(d.TokensA, d.TokensB)) + " tokens"
	if d.Align == "nearest" {
		at = fmt.Sprintf("at %s vs %s tokens (nearest evaluations)", Tokens(d.TokensB), Tokens(d.TokensA))
	}
	se := *d.StdErr
	switch better(d) {
	case "B":
		return fmt.Sprintf("%s is better than %s on %s by %.3f ± %.3f %s %s", p.NameB, p.NameA, what, math.Abs(d.Delta), se, unit, at)
	case "A":
		return fmt.Sprintf("%s is worse than %s on %s by %.3f ± %.3f %s %s", p.NameB, p.NameA, what, math.Abs(d.Delta), se, unit, at)
	}
	line := fmt.Sprintf("no difference beyond noise on %s: %s − %s = %+.3f ± %.3f %s %s (within 2 standard errors)", what, p.NameB, p.NameA, d.Delta, se, unit, at)
	if t := p.Train; d != t && t != nil && t.StdErr != nil && better(t) != "" {
		word := "better"
		if better(t) == "A" {
			word = "worse"
		}
		line += fmt.Sprintf("; on train loss (%s, last %d steps) %s is %s by %.3f ± %.3f", t.Noise, t.N, p.NameB, word, math.Abs(t.Delta), *t.StdErr)
	}
	return line
}

// Tokens writes a token count as 950, 12.3k, 2.1M or 1.4B.
func Tokens(n int64) string {
	f := float64(n)
	switch {
	case f >= 1e9:
		return fmt.Sprintf("%.1fB", f/1e9)
	case f >= 1e6:
		return fmt.Sprintf("%.1fM", f/1e6)
	case f >= 1e4:
		return fmt.Sprintf("%.1fk", f/1e3)
	}
	return fmt.Sprintf("%d", n)
}
