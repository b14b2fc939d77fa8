package compare

import (
	"math"
	"strings"
)

// JitterPoints is how many of a run's evaluations, up to the compared
// one, the eval-jitter noise estimate reads: the recent ones, where the
// curve is nearest a straight line (its early curvature would read as
// noise).
const JitterPoints = 4

// trainDelta compares the train loss: the mean of train_loss_raw over the
// last window steps after the shared history, up to the common tokens.
// When both runs have the same steps at the same tokens there (a branch
// and its parent, or two runs of one batch schedule) the steps are paired
// and the standard error is that of the mean per-step difference,
// sd(B−A)/√n, which removes the batch-to-batch noise both runs see;
// otherwise it is √(varA/nA + varB/nB). nil when neither run has a step
// after the shared history.
func trainDelta(a, b []point, sharedStep int, tokens int64, window int) *Delta {
	wa, wb := tail(a, sharedStep, tokens, window), tail(b, sharedStep, tokens, window)
	if len(wa) == 0 || len(wb) == 0 {
		return nil
	}
	d := &Delta{Metric: "train_loss_raw", Align: "window", StepA: wa[len(wa)-1].Step, StepB: wb[len(wb)-1].Step,
		TokensA: wa[len(wa)-1].Tokens, TokensB: wb[len(wb)-1].Tokens}
	ma, va := meanVar(wa)
	mb, vb := meanVar(wb)
	d.A, d.B, d.Delta = ma, mb, mb-ma
	if diffs, ok := paired(wa, wb); ok {
		d.N = len(diffs)
		m, v := meanVar(diffs)
		d.Delta = m
		if d.N >= 2 {
			d.StdErr = ptr(math.Sqrt(v / float64(d.N)))
		}
		d.Noise = "paired steps"
	} else {
		d.N = min(len(wa), len(wb))
		if len(wa) >= 2 && len(wb) >= 2 {
			d.StdErr = ptr(math.Sqrt(va/float64(len(wa)) + vb/float64(len(wb))))
		}
		d.Noise = "unpaired steps"
	}
	if d.StdErr == nil {
		d.Noise += " (fewer than 2 steps: no estimate)"
	}
	d.Better = better(d)
	return d
}

// tail is the last n points after step after with tokens ≤ tokens.
func tail(s []point, after int, tokens int64, n int) []point {
	var out []point
	for _, x := range s {
		if x.Step > after && x.Tokens <= tokens {
			out = append(out, x)
		}
	}
	if len(out) > n {
		out = out[len(out)-n:]
	}
	return out
}

// paired returns B−A per step when both windows hold the same steps at
// the same tokens.
func paired(a, b []point) ([]point, bool) {
	if len(a) != len(b) {
		return nil, false
	}
	out := make([]point, len(a))
	for i := range a {
		if a[i].Step != b[i].Step || a[i].Tokens != b[i].Tokens {
			return nil, false
		}
		out[i] = point{a[i].Step, a[i].Tokens, b[i].V - a[i].V}
	}
	return out, true
}

// meanVar is the mean and the sample variance (n−1) of the values.
func meanVar(s []point) (mean, variance float64) {
	for _, x := range s {
		mean += x.V
	}
	mean /= float64(len(s))
	if len(s) < 2 {
		return mean, 0
	}
	for _, x := range s {
		variance += (x.V - mean) * (x.V - mean)
	}
	return mean, variance / float64(len(s)-1)
}

func ptr(v float64) *float64 { return &v }

// evalNames are the evaluation metrics both runs recorded, standard
// errors aside, val_loss first.
func evalNames(a, b *series) []string {
	out := []string{}
	if len(a.eval["val_loss"]) > 0 && len(b.eval["val_loss"]) > 0 {
		out = append(out, "val_loss")
	}
	for _, k := range sortedKeys(a.eval) {
		if k == "val_loss" || strings.HasPrefix(k, "bench_stderr/") || len(b.eval[k]) == 0 {
			continue
		}
		out = append(out, k)
	}
	return out
}

// evalDelta compares one evaluation metric at a common point up to the
// common tokens. The point: the latest evaluation after the shared
// history at the same tokens_seen in both runs ("exact"); else B's latest
// evaluation and A's evaluation nearest to it in tokens ("nearest": the
// two token counts are reported). The standard error: for a benchmark,
// √(seA² + seB²) from the bench_stderr/… both runs recorded; for every
// other metric the eval jitter (jitter).
func evalDelta(name string, a, b *series, sharedStep int, tokens int64) *Delta {
	pa, pb := upTo(a.eval[name], tokens), upTo(b.eval[name], tokens)
	if len(pa) == 0 || len(pb) == 0 {
		return nil
	}
	ia, ib, align := match(pa, pb, sharedStep)
	d := &Delta{Metric: name, A: pa[ia].V, B: pb[ib].V, Delta: pb[ib].V - pa[ia].V, Align: align,
		StepA: pa[ia].Step, StepB: pb[ib].Step, TokensA: pa[ia].Tokens, TokensB: pb[ib].Tokens}
	if strings.HasPrefix(name, "bench/") {
		se := "bench_stderr/" + strings.TrimPrefix(name, "bench/")
		sa, okA := valueAt(a.eval[se], d.StepA)
		sb, okB := valueAt(b.eval[se], d.StepB)
		if okA && okB {
			d.StdErr, d.Noise = ptr(math.Sqrt(sa*sa+sb*sb)), "bench_stderr"
		} else {
			d.Noise = "no bench_stderr recorded"
		}
	} else {
		ja, okA := jitter(pa[:ia+1])
		jb, okB := jitter(pb[:ib+1])
		if okA && okB {
			d.StdErr, d.Noise = ptr(math.Sqrt(ja*ja+jb*jb)), "eval jitter"
		} else {
			d.Noise = "fewer than 3 evaluations: no estimate"
		}
	}
	d.Better = better(d)
	return d
}

// upTo is the points with tokens ≤ tokens.
func upTo(s []point, tokens int64) []point {
	n := 0
	for n < len(s) && s[n].Tokens <= tokens {
		n++
	}
	return s[:n]
}

// match picks the compared evaluation of each run (see evalDelta).
func match(pa, pb []point, sharedStep int) (ia, ib int, align string) {
	at := map[int64]int{}
	for i, x := range pa {
		at[x.Tokens] = i
	}
	for i := len(pb) - 1; i >= 0; i-- {
		if pb[i].Step <= sharedStep && i < len(pb)-1 {
			break // no common point after the shared history
		}
		if j, ok := at[pb[i].Tokens]; ok {
			return j, i, "exact"
		}
	}
	ib = len(pb) - 1
	ia = 0
	for i, x := range pa {
		if abs64(x.Tokens-pb[ib].Tokens) < abs64(pa[ia].Tokens-pb[ib].Tokens) {
			ia = i
		}
	}
	if pa[ia].Tokens == pb[ib].Tokens {
		return ia, ib, "exact"
	}
	return ia, ib, "nearest"
}

func abs64(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

// valueAt is the value of s at step.
func valueAt(s []point, step int) (float64, bool) {
	for _, x := range s {
		if x.Step == step {
			return x.V, true
		}
	}
	return 0, false
}

// jitter estimates the noise σ of one evaluation of a run from its last
// JitterPoints evaluations (up to the compared one): on a curve that is
// locally a straight line plus independent noise of variance σ², each
// second difference v[i−1] − 2v[i] + v[i+1] has variance 6σ², so σ̂ =
// √(mean of the squared second differences / 6). The trend cancels; what
// is left is the measurement's own noise (which validation rows, which
// weights along the trajectory) plus any curvature, so the estimate errs
// on the side of calling a difference noise. It needs 3 evaluations.
func jitter(s []point) (float64, bool) {
	if len(s) > JitterPoints {
		s = s[len(s)-JitterPoints:]
	}
	if len(s) < 3 {
		return 0, false
	}
	sum := 0.0
	for i := 1; i+1 < len(s); i++ {
		dd := s[i-1].V - 2*s[i].V + s[i+1].V
		sum += dd * dd
	}
	return math.Sqrt(sum / float64(len(s)-2) / 6), true
}
