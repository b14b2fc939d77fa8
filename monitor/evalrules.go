package monitor

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
)

// The evaluation rule families, judged on each evaluation in this order
// after the divergence rule's val_loss criterion: val_regression,
// fixed_probe_discontinuity, val_loss_jump (gaprules.go),
// train_val_gap_widening, slice_val_regression and bench_regression.

// valRegressionRule is SEV2 val_regression: val_loss rose at each of the
// last val_regress_evals evaluations.
type valRegressionRule struct {
	ctx  *ruleCtx
	vals []float64 // every finite val_loss so far
}

func (f *valRegressionRule) observeEval(s *Sample, es []evalPoint, out *[]Alert) {
	x := es[len(es)-1].val
	if !finite(x) {
		return
	}
	f.vals = append(f.vals, x)
	n := f.ctx.cfg.ValRegressEvals
	if n <= 0 || len(f.vals) < n+1 {
		return
	}
	last := f.vals[len(f.vals)-n-1:]
	for i := 1; i < len(last); i++ {
		if last[i] <= last[i-1] {
			return
		}
	}
	f.ctx.fire(out, s, RuleValRegression, "val_loss", x, last[0],
		fmt.Sprintf("val_loss rose in %d consecutive evals: %.4g → %.4g", n, last[0], x))
}

// probeJumpRule is fixed_probe_discontinuity: fixed_probe_loss moved from
// the previous eval that measured it by more than fixed_probe_jump nats
// beyond what val_loss moved over the same evals.
type probeJumpRule struct{ ctx *ruleCtx }

func (f *probeJumpRule) observeEval(s *Sample, es []evalPoint, out *[]Alert) {
	p, jump := es[len(es)-1], f.ctx.cfg.FixedProbeJump
	if !finite(p.probe) {
		return
	}
	for i := len(es) - 2; i >= 0; i-- {
		q := es[i]
		if !finite(q.probe) {
			continue
		}
		d := p.probe - q.probe
		resid, how := d, ""
		if finite(p.val) && finite(q.val) {
			resid = d - (p.val - q.val)
			how = fmt.Sprintf(" while val_loss moved %+.4g", p.val-q.val)
		}
		if math.Abs(resid) > jump {
			f.ctx.fire(out, s, RuleProbeJump, "fixed_probe_loss", p.probe, q.probe+math.Copysign(jump, d),
				fmt.Sprintf("fixed_probe_loss %.4g → %.4g (%+.4g) between the evals of steps %d and %d%s: the frozen probe batch jumped by %.3g nats more than the model's val loss (fixed_probe_jump %.3g)",
					q.probe, p.probe, d, q.step, p.step, how, math.Abs(resid), jump))
		}
		return
	}
}

// lastEvals returns the last n evals of es for which ok holds, if the last
// n evals that have a val_loss all do (oldest first).
func lastEvals(es []evalPoint, n int, ok func(evalPoint) bool) []evalPoint {
	var got []evalPoint
	for i := len(es) - 1; i >= 0 && len(got) < n; i-- {
		e := es[i]
		if !finite(e.val) {
			continue
		}
		if !ok(e) {
			return nil
		}
		got = append(got, e)
	}
	if len(got) < n {
		return nil
	}
	slices.Reverse(got)
	return got
}

// gapWideningRule is train_val_gap_widening: train_val_gap, positive at
// the start, grew at each of the last gap_widen_evals evals, by gap_widen
// nats in all, while val_loss improved by less than the gap grew: the
// model fits the train stream faster than it generalises (overfitting, or
// a train/val mismatch).
type gapWideningRule struct{ ctx *ruleCtx }

func (f *gapWideningRule) observeEval(s *Sample, all []evalPoint, out *[]Alert) {
	cfg := f.ctx.cfg
	n := cfg.GapWidenEvals
	if n <= 0 {
		return
	}
	es := lastEvals(all, n+1, func(e evalPoint) bool { return finite(e.gap) })
	if es == nil {
		return
	}
	for i := 1; i < len(es); i++ {
		if es[i].gap <= es[i-1].gap {
			return
		}
	}
	first, last := es[0], es[len(es)-1]
	widen, improve := last.gap-first.gap, first.val-last.val
	// A negative gap closing is train_loss_ema catching up with a loss
	// that fell faster than the EMA follows (early training), not a model
	// that stops generalising: only a gap that is already positive counts.
	if first.gap < 0 || widen < cfg.GapWiden || improve >= widen {
		return
	}
	f.ctx.fire(out, s, RuleGapWidening, "train_val_gap", last.gap, first.gap+cfg.GapWiden,
		fmt.Sprintf("train_val_gap widened at each of the last %d evals, %.4g → %.4g (+%.3g nats, steps %d-%d), while val_loss improved only %.3g (%.4g → %.4g)",
			n, first.gap, last.gap, widen, first.step, last.step, improve, first.val, last.val))
}

// sliceRule is slice_val_regression: a source's slice_val_loss rose at
// each of the last slice_regress_evals evals, by slice_regress_min nats in
// all, while val_loss fell or rose by less than half as much — the
// aggregate hides a regression of one source. A source whose weight a data
// stage lowered over the same evals is expected to regress and is left out
// (a planned curriculum).
type sliceRule struct{ ctx *ruleCtx }

func (f *sliceRule) observeEval(s *Sample, all []evalPoint, out *[]Alert) {
	cfg, sc := f.ctx.cfg, &f.ctx.sched
	n := cfg.SliceRegressEvals
	if n <= 0 {
		return
	}
	for _, src := range slices.Sorted(maps.Keys(all[len(all)-1].slices)) {
		es := lastEvals(all, n+1, func(e evalPoint) bool { _, ok := e.slices[src]; return ok })
		if es == nil || !rising(es, func(e evalPoint) float64 { return e.slices[src] }) {
			continue
		}
		first, last := es[0], es[len(es)-1]
		rise, valRise := last.slices[src]-first.slices[src], last.val-first.val
		if rise < cfg.SliceRegressMin || valRise >= rise/2 {
			continue
		}
		if w0, ok0 := sc.targetAt(first.step, src); ok0 {
			if w1, ok1 := sc.targetAt(last.step, src); ok1 && w1 < w0 {
				continue // a stage lowered this source's weight: planned
			}
		}
		f.ctx.fire(out, s, RuleSliceRegression, "slice_val_loss/"+src, last.slices[src], first.slices[src]+cfg.SliceRegressMin,
			fmt.Sprintf("slice_val_loss/%s rose at each of the last %d evals, %.4g → %.4g (+%.3g nats, steps %d-%d), while val_loss went %.4g → %.4g",
				src, n, first.slices[src], last.slices[src], rise, first.step, last.step, first.val, last.val))
	}
}

// rising reports whether x of es rose from each eval to the next.
func rising(es []evalPoint, x func(evalPoint) float64) bool {
	for i := 1; i < len(es); i++ {
		if x(es[i]) <= x(es[i-1]) {
			return false
		}
	}
	return true
}

// benchRule is bench_regression: an in-loop benchmark got worse at each of
// the last bench_regress_evals evaluations that measured it (an accuracy
// fell, a bits per byte rose), by more than its noise in all.
type benchRule struct{ ctx *ruleCtx }

func (f *benchRule) observeEval(s *Sample, all []evalPoint, out *[]Alert) {
	n := f.ctx.cfg.BenchRegressEvals
	if n <= 0 {
		return
	}
	for _, name := range slices.Sorted(maps.Keys(all[len(all)-1].bench)) {
		// the last n+1 evaluations that measured it, oldest first
		var es []evalPoint
		for i := len(all) - 1; i >= 0 && len(es) <= n; i-- {
			if _, ok := all[i].bench[name]; ok {
				es = append(es, all[i])
			}
		}
		if len(es) <= n {
			continue
		}
		slices.Reverse(es)
		f.judge(out, s, name, es)
	}
}

// judge fires bench_regression on benchmark name when it worsened at each
// of es (oldest first) by more than its noise.
func (f *benchRule) judge(out *[]Alert, s *Sample, name string, es []evalPoint) {
	cfg := f.ctx.cfg
	lower := strings.HasPrefix(name, "bpb/") // bits per byte: lower is better
	for i := 1; i < len(es); i++ {
		a, b := es[i-1].bench[name], es[i].bench[name]
		if !(lower && b > a || !lower && b < a) {
			return
		}
	}
	first, last := es[0].bench[name], es[len(es)-1].bench[name]
	var thr float64
	var noise string
	if lower {
		thr = cfg.BenchRegressBPB * math.Abs(first)
		noise = fmt.Sprintf("bench_regress_bpb %.3g of %.4g", cfg.BenchRegressBPB, first)
	} else {
		se0, ok0 := es[0].benchSE[name]
		se1, ok1 := es[len(es)-1].benchSE[name]
		if ok0 && ok1 {
			thr = cfg.BenchRegressSigma * math.Hypot(se0, se1)
			noise = fmt.Sprintf("%.3g standard errors of the difference, ±%.4g", cfg.BenchRegressSigma, math.Hypot(se0, se1))
		} else {
			thr = cfg.BenchRegressSigma * 0.01
			noise = fmt.Sprintf("%.3g points (no standard error recorded)", thr*100)
		}
	}
	if math.Abs(last-first) <= thr {
		return
	}
	bound, verb := first-thr, "fell"
	if lower {
		bound, verb = first+thr, "rose"
	}
	f.ctx.fire(out, s, RuleBenchRegression, name, last, bound,
		fmt.Sprintf("%s %s at each of the last %d benchmark evaluations, %.4g → %.4g (steps %d-%d), by more than the noise (%s); val_loss %.4g → %.4g",
			name, verb, len(es)-1, first, last, es[0].step, es[len(es)-1].step, noise, es[0].val, es[len(es)-1].val))
}
