package monitor

import (
	"math"
	"sort"
	"strings"
)

// The alert rules are one type per rule family (divergence, attention,
// throughput, batch, checkpoint, …), each holding its own state, behind
// three small interfaces: stepRule judges every step sample, evalRule every
// evaluation, ckptRule every committed checkpoint. rules holds the
// families in one list, in the order their alerts are emitted within a
// step, and the context they share (ruleCtx: the config, the cooldowns,
// the mixture schedule, whether history is being replayed).

// stepRule is a rule family judged on each step's sample.
type stepRule interface {
	// observe judges one step's sample (derived vitals already added) and
	// appends what fired to out. While Monitor.Seed replays a run's history
	// the context's seeding is set and fire is mute: the family learns its
	// windows from the history, and freezes them as it would live.
	observe(s *Sample, out *[]Alert)
}

// liveOnly marks a stepRule that Seed's history does not feed: the machine
// or the process may have changed since (throughput, straggler).
type liveOnly interface{ liveOnly() }

// evalRule is a rule family judged on each evaluation.
type evalRule interface {
	// observeEval judges the newest evaluation, es[len(es)-1]; es holds
	// every evaluation so far, oldest first. s carries its step and tokens.
	observeEval(s *Sample, es []evalPoint, out *[]Alert)
}

// ckptRule is a rule family judged on each committed checkpoint's values
// (Monitor.Record of an EventCheckpoint that succeeded).
type ckptRule interface {
	observeCheckpoint(s *Sample, v map[string]float64, out *[]Alert)
}

// ruleCtx is what the rule families share: the config, the cooldown of
// each rule, the data mixture schedule, ln V, and the seeding flag.
type ruleCtx struct {
	cfg       Config
	lastFired map[string]int64
	sched     schedule
	lnV       float64 // ln of the vocabulary size (NaN = unknown)
	// seeding is set while Monitor.Seed replays a run's history into the
	// windows: nothing fires.
	seeding bool
}

// rules holds every rule family. It is driven by Monitor.
type rules struct {
	*ruleCtx
	steps  []stepRule
	evalRs []evalRule
	ckptRs []ckptRule
	evals  []evalPoint // evaluations so far (oldest first)

	// The families other parts of the monitor read.
	clip    *clipRule      // derive's grad_clip_rate reads its window
	garbage *batchRule     // the spike verdict cites its batches outside the band
	dist    *stragglerRule // SetRankHosts, RankHang
}

// evalPoint is one evaluation as the eval rules see it (NaN = absent).
type evalPoint struct {
	step            int64
	val, gap, probe float64
	slices          map[string]float64
	// bench holds the in-loop benchmarks (bench/…, bpb/…) and benchSE the
	// standard errors recorded as bench_stderr/….
	bench, benchSE map[string]float64
}

// newRules starts the rules with a mixture schedule (stages in any
// order, weights normalised here), the model's vocabulary size (0 =
// unknown) and the run's warm-up length (0 = none or unknown: the end of
// warm-up is then taken from learning_rate when the samples carry it).
func newRules(cfg Config, stages []MixStage, vocab, warmup int) *rules {
	c := &ruleCtx{cfg: cfg, lastFired: map[string]int64{}, sched: newSchedule(stages), lnV: math.NaN()}
	if vocab > 1 {
		c.lnV = math.Log(float64(vocab))
	}
	r := &rules{ruleCtx: c, clip: newClipRule(c), garbage: newBatchRule(c), dist: newStragglerRule(c)}
	for _, f := range r.families(warmup) {
		if x, ok := f.(stepRule); ok {
			r.steps = append(r.steps, x)
		}
		if x, ok := f.(evalRule); ok {
			r.evalRs = append(r.evalRs, x)
		}
		if x, ok := f.(ckptRule); ok {
			r.ckptRs = append(r.ckptRs, x)
		}
	}
	return r
}

// families builds every rule family of r, in the order of a step's alerts
// (the evaluation families, after divergence's val_loss criterion, in the
// order of an evaluation's).
func (r *rules) families(warmup int) []any {
	c := r.ruleCtx
	return []any{
		newNumericsRule(c), newDivergenceRule(c), &offTrackRule{ctx: c}, r.garbage,
		newAttentionRule(c), newThroughputRule(c), r.dist, r.clip, &mixRule{ctx: c, rings: map[string]*ring{}},
		newFlatLossRule(c, warmup), newCheckpointRule(c, &r.evals), newVitalsRule(c), &moeRule{ctx: c},
		&stallRule{ctx: c, window: newRing(c.cfg.Window)},
		&valRegressionRule{ctx: c}, &probeJumpRule{ctx: c}, &valJumpRule{ctx: c}, &gapWideningRule{ctx: c},
		&sliceRule{ctx: c}, &benchRule{ctx: c},
	}
}

// fire builds an alert unless the rule fired within the cooldown.
func (c *ruleCtx) fire(out *[]Alert, s *Sample, rule, metric string, value, thr float64, msg string) {
	if c.seeding {
		return
	}
	key := rule + "|" + metric
	if rule == RuleThroughputDrop || rule == RuleContention || rule == RuleDivergence {
		// tokens_per_sec and mfu move together (mfu is tokens_per_sec times a
		// constant unless the model changes): one incident, not two pages;
		// likewise one divergence, whichever criterion saw it.
		key = rule
	}
	if last, ok := c.lastFired[key]; ok && s.Step-last < int64(max(1, c.cfg.Cooldown)) {
		return
	}
	c.lastFired[key] = s.Step
	*out = append(*out, newAlert(s.Step, s.Tokens, rule, metric, value, thr, msg))
}

func newAlert(step, tokens int64, rule, metric string, value, thr float64, msg string) Alert {
	rb, _ := RunbookFor(rule)
	return Alert{Step: step, Tokens: tokens, Severity: rb.Severity, Rule: rule, Metric: metric,
		Value: value, Threshold: thr, Message: msg, Action: rb.Severity.Action(), Runbook: runbookText(rule)}
}

// check runs every step family on s (already enriched with derived values)
// and returns the alerts that fired.
func (r *rules) check(s *Sample) []Alert {
	var out []Alert
	for _, f := range r.steps {
		if _, live := f.(liveOnly); live && r.seeding {
			continue
		}
		f.observe(s, &out)
	}
	return out
}

// eval runs every evaluation family on one evaluation's values.
func (r *rules) eval(step, tokens int64, v map[string]float64) []Alert {
	var out []Alert
	r.evals = append(r.evals, newEvalPoint(step, v))
	s := &Sample{Step: step, Tokens: tokens}
	for _, f := range r.evalRs {
		f.observeEval(s, r.evals, &out)
	}
	return out
}

// checkpoint runs the checkpoint families on a committed checkpoint's values.
func (r *rules) checkpoint(step, tokens int64, v map[string]float64) []Alert {
	var out []Alert
	s := &Sample{Step: step, Tokens: tokens}
	for _, f := range r.ckptRs {
		f.observeCheckpoint(s, v, &out)
	}
	return out
}

// newEvalPoint reads one evaluation's values.
func newEvalPoint(step int64, v map[string]float64) evalPoint {
	get := func(n string) float64 {
		if x, ok := v[n]; ok && finite(x) {
			return x
		}
		return math.NaN()
	}
	p := evalPoint{step: step, val: get("val_loss"), gap: get("train_val_gap"), probe: get("fixed_probe_loss"), slices: map[string]float64{}}
	for k, x := range v {
		switch {
		case !finite(x):
		case strings.HasPrefix(k, "slice_val_loss/"):
			p.slices[strings.TrimPrefix(k, "slice_val_loss/")] = x
		case strings.HasPrefix(k, "bench/") || strings.HasPrefix(k, "bpb/"):
			if p.bench == nil {
				p.bench, p.benchSE = map[string]float64{}, map[string]float64{}
			}
			p.bench[k] = x
		}
	}
	for k := range p.bench {
		if se, ok := v["bench_stderr/"+strings.TrimPrefix(k, "bench/")]; ok && strings.HasPrefix(k, "bench/") && finite(se) {
			p.benchSE[k] = se
		}
	}
	return p
}

// isEval reports whether values hold an evaluation's results.
func isEval(v map[string]float64) bool {
	if _, ok := v["val_loss"]; ok {
		return true
	}
	if _, ok := v["fixed_probe_loss"]; ok {
		return true
	}
	for k := range v {
		if strings.HasPrefix(k, "slice_val_loss/") {
			return true
		}
	}
	return false
}

func meanOf(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// worstSuffix names the layer/head variant holding the worst value.
func worstSuffix(v map[string]float64, base string, highest bool) string {
	best, bestName := math.NaN(), ""
	names := make([]string, 0)
	for n := range v {
		if strings.HasPrefix(n, base+"/") {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		x := v[n]
		if !finite(x) {
			continue
		}
		if math.IsNaN(best) || (highest && x > best) || (!highest && x < best) {
			best, bestName = x, n
		}
	}
	if bestName == "" {
		return ""
	}
	return " at " + strings.TrimPrefix(bestName, base+"/")
}
