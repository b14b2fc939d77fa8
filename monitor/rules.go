package monitor

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
)

// rules holds the state of every alert rule. It is driven by Monitor.
type rules struct {
	cfg       Config
	lastFired map[string]int64

	skips    *ring
	clips    *ring // clip_baseline + window clip flags
	tps      *ring
	mfu      *ring
	cpuTok   *ring // process CPU seconds per token, beside tps (NaN = not measured)
	wallStep *ring // step_time, beside tps
	cpuStep  *ring // cpu_time, beside tps
	losses   *ring // train_loss_raw (divergence baseline)
	batchEnt *ring // batch_token_entropy (batch_anomaly baseline)
	u2w      *ring // update_to_weight of applied steps (divergence baseline)
	divRun   int   // consecutive steps with train_loss_raw above the divergence bound
	u2wRun   int   // consecutive steps with update_to_weight above divergence_update_rise × its median
	lnV      float64
	stall    *ring
	mix      map[string]*ring
	entropy  []float64 // early-run worst entropies (baseline)
	entBase  float64
	capSteps int
	vals     []float64
	spikes   []int64 // steps of detected spikes (for clusters)
	offRun   int     // consecutive judged steps above the loss-vs-tokens fit (ontrack.go)

	stages  []MixStage      // mixture schedule (sorted by StartStep); nil = no targets
	srcs    map[string]bool // every source named by a stage
	evals   []evalPoint     // evaluations so far (oldest first)
	ckTimes []float64       // checkpoint_time of each checkpoint
	ckLast  int64           // step of the last checkpoint counted for checkpoint_time
	kls     []float64       // output_kl_to_prev of each checkpoint
	klLast  int64           // step of the last checkpoint counted for output_kl_to_prev
	flat    flatState

	moeState moeRules  // moe.go
	dist     distState // data-parallel rules (distributed.go)

	// seeding is set while Monitor.Seed replays a run's history into the
	// windows: nothing fires.
	seeding bool

	witness *witnessRings // the contention rule's second witnesses, beside tps (contention.go)
	vit     vitalState    // memory, optimizer-state, checkpoint-size and lm_head rules (memrules.go, ckptrules.go)

	garbage garbageState // garbage_batch's windows (batchrules.go)
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

// flatState is the state of the flat-loss-after-warm-up rule.
type flatState struct {
	warm   int64   // last warm-up step; -1 = not known yet (taken from learning_rate)
	lastLR float64 // learning_rate of the previous step (NaN = none)
	recent []stepLoss
	meds   map[int64]float64 // window index → median train_loss_raw
	done   bool
}

type stepLoss struct {
	step int64
	loss float64
}

// newRules starts the rules with a mixture schedule (stages in any
// order, weights normalised here) and the run's warm-up length (0 = none
// or unknown: the end of warm-up is then taken from learning_rate when the
// samples carry it).
func newRules(cfg Config, stages []MixStage, vocab, warmup int) *rules {
	lnV := math.NaN()
	if vocab > 1 {
		lnV = math.Log(float64(vocab))
	}
	r := &rules{
		cfg: cfg, lastFired: map[string]int64{},
		skips: newRing(cfg.SkipStormSteps), clips: newRing(cfg.ClipBaseline + cfg.Window),
		tps: newRing(cfg.Window), mfu: newRing(cfg.Window), stall: newRing(cfg.Window),
		cpuTok: newRing(cfg.Window), wallStep: newRing(cfg.Window), cpuStep: newRing(cfg.Window),
		losses: newRing(cfg.Window), u2w: newRing(cfg.Window), batchEnt: newRing(cfg.Window), lnV: lnV,
		mix: map[string]*ring{}, entBase: math.NaN(),
		ckLast: math.MinInt64, klLast: math.MinInt64,
		flat: flatState{warm: int64(warmup), lastLR: math.NaN(), meds: map[int64]float64{}},
	}
	if warmup <= 0 {
		r.flat.warm = -1
	}
	r.srcs = map[string]bool{}
	for _, st := range stages {
		var sum float64
		for _, w := range st.Weights {
			if finite(w) && w > 0 {
				sum += w
			}
		}
		if sum <= 0 {
			continue
		}
		n := MixStage{StartStep: st.StartStep, Weights: map[string]float64{}}
		for name, w := range st.Weights {
			if !finite(w) || w < 0 {
				w = 0
			}
			n.Weights[name] = w / sum
			r.srcs[name] = true
		}
		r.stages = append(r.stages, n)
	}
	sort.SliceStable(r.stages, func(i, j int) bool { return r.stages[i].StartStep < r.stages[j].StartStep })
	return r
}

// targetAt returns the weight of source src in the data stage in force at
// step; ok is false when no stage has started yet or no stage names src.
func (r *rules) targetAt(step int64, src string) (w float64, ok bool) {
	if !r.srcs[src] {
		return 0, false
	}
	i := sort.Search(len(r.stages), func(i int) bool { return r.stages[i].StartStep > step }) - 1
	if i < 0 {
		return 0, false
	}
	return r.stages[i].Weights[src], true // a source the stage does not name gets 0
}

// fire builds an alert unless the rule fired within the cooldown.
func (r *rules) fire(out *[]Alert, s *Sample, rule, metric string, value, thr float64, msg string) {
	if r.seeding {
		return
	}
	key := rule + "|" + metric
	if rule == RuleThroughputDrop || rule == RuleContention || rule == RuleDivergence {
		// tokens_per_sec and mfu move together (mfu is tokens_per_sec times a
		// constant unless the model changes): one incident, not two pages;
		// likewise one divergence, whichever criterion saw it.
		key = rule
	}
	if last, ok := r.lastFired[key]; ok && s.Step-last < int64(max(1, r.cfg.Cooldown)) {
		return
	}
	r.lastFired[key] = s.Step
	*out = append(*out, newAlert(s.Step, s.Tokens, rule, metric, value, thr, msg))
}

func newAlert(step, tokens int64, rule, metric string, value, thr float64, msg string) Alert {
	rb, _ := RunbookFor(rule)
	return Alert{Step: step, Tokens: tokens, Severity: rb.Severity, Rule: rule, Metric: metric,
		Value: value, Threshold: thr, Message: msg, Action: rb.Severity.Action(), Runbook: runbookText(rule)}
}

// check evaluates every per-step rule on s (already enriched with derived
// values) and returns the alerts that fired.
func (r *rules) check(s *Sample) []Alert {
	var out []Alert
	v := s.Values
	get := func(name string) (float64, bool) {
		x, ok := v[name]
		return x, ok
	}

	// SEV0: NaN/Inf.
	nonFinite := []string{}
	for _, n := range []string{"train_loss_raw", "grad_global_norm", "update_norm"} {
		if x, ok := get(n); ok && !finite(x) {
			nonFinite = append(nonFinite, n)
		}
	}
	if x, ok := get("nan_inf_events"); (ok && x > 0) || len(nonFinite) > 0 {
		if !ok || !finite(x) {
			x = 1
		}
		msg := fmt.Sprintf("nan_inf_events = %g at step %d", x, s.Step)
		if len(nonFinite) > 0 {
			msg += "; non-finite " + strings.Join(nonFinite, ", ")
		}
		r.fire(&out, s, RuleNaNInf, "nan_inf_events", x, 0, msg)
	}
	// SEV0: checkpoint failure reported as a value.
	if x, ok := get("checkpoint_ok"); ok && x == 0 {
		r.fire(&out, s, RuleCheckpointFailed, "checkpoint_ok", 0, 1, fmt.Sprintf("checkpoint_ok = 0 at step %d", s.Step))
	}
	// SEV0: skip/overflow storm.
	skip := 0.0
	if x, ok := get("skipped"); ok && x > 0 {
		skip = 1
	}
	if x, ok := get("overflow"); ok && x > 0 {
		skip = 1
	}
	r.skips.push(skip)
	if r.skips.full {
		if f := r.skips.mean(); f > r.cfg.SkipStormFrac {
			r.fire(&out, s, RuleSkipStorm, "skipped_updates", f, r.cfg.SkipStormFrac,
				fmt.Sprintf("%.0f%% of the last %d steps were skipped or overflowed", 100*f, r.cfg.SkipStormSteps))
		}
	}
	// SEV0: divergence.
	r.divergence(&out, s)
	// SEV2: off the run's own loss-vs-tokens fit (ontrack.go).
	r.offTrack(&out, s)
	// SEV1/SEV2: a batch unlike the run's data (batchrules.go).
	r.batchChecks(&out, s)

	// SEV1: attention logits.
	if x, ok := get("max_attn_logit"); ok && finite(x) {
		if x > r.cfg.AttnLogitRed {
			r.fire(&out, s, RuleAttnLogitRunaway, "max_attn_logit", x, r.cfg.AttnLogitRed,
				fmt.Sprintf("max_attn_logit %.4g > %.4g%s", x, r.cfg.AttnLogitRed, worstSuffix(v, "max_attn_logit", true)))
		}
		if x > r.cfg.AttnLogitCap {
			r.capSteps++
			if r.capSteps >= max(1, r.cfg.Cooldown) {
				r.fire(&out, s, RuleAttnLogitCap, "max_attn_logit", x, r.cfg.AttnLogitCap,
					fmt.Sprintf("max_attn_logit above τ = %.4g for %d steps (now %.4g%s)", r.cfg.AttnLogitCap, r.capSteps, x, worstSuffix(v, "max_attn_logit", true)))
			}
		} else {
			r.capSteps = 0
		}
	}
	// SEV1: entropy collapse — broad collapse, so the mean over heads when
	// per-head values exist (single sharp heads are normal), else the worst.
	entName := "attn_entropy"
	if _, ok := get("attn_entropy_mean"); ok {
		entName = "attn_entropy_mean"
	}
	if x, ok := get(entName); ok && finite(x) {
		if len(r.entropy) < r.cfg.Window {
			r.entropy = append(r.entropy, x)
			if len(r.entropy) == r.cfg.Window {
				r.entBase = median(append([]float64(nil), r.entropy...))
			}
		}
		switch {
		case x < r.cfg.EntropyCollapse:
			r.fire(&out, s, RuleEntropyCollapse, entName, x, r.cfg.EntropyCollapse,
				fmt.Sprintf("%s %.4g nats < %.4g (worst%s)", entName, x, r.cfg.EntropyCollapse, worstSuffix(v, "attn_entropy", false)))
		case finite(r.entBase) && x < r.cfg.EntropyDropFrac*r.entBase:
			r.fire(&out, s, RuleEntropyCollapse, entName, x, r.cfg.EntropyDropFrac*r.entBase,
				fmt.Sprintf("%s %.4g nats fell below %.0f%% of its early median %.4g (worst%s)", entName, x, 100*r.cfg.EntropyDropFrac, r.entBase, worstSuffix(v, "attn_entropy", false)))
		}
	}
	if !r.seeding { // the machine's speed before a restart is no baseline for after it
		// SEV1: throughput / MFU drop (SEV2 contention when CPU time did not grow).
		r.throughput(&out, s)
		// SEV1: a straggler rank in a data-parallel run.
		r.straggler(&out, s)
	}
	// SEV1: rising clip rate — a rise over the baseline, not a high level.
	if x, ok := get("grad_clipped"); ok {
		c := 0.0
		if x > 0 {
			c = 1
		}
		r.clips.push(c)
		if cur, base, n, ok := r.clipRates(); ok && cur > r.cfg.ClipRate && base < r.cfg.ClipRate && cur-base >= r.cfg.ClipRise {
			r.fire(&out, s, RuleClipRate, "grad_clip_rate", cur, base+r.cfg.ClipRise,
				fmt.Sprintf("grad_clip_rate %.0f%% over the last %d steps, up from %.0f%% over the %d steps before", 100*cur, r.cfg.Window, 100*base, n))
		}
	}

	// SEV2: mixture drift against the weights of the stage in force.
	if len(r.stages) > 0 {
		names := make([]string, 0)
		for name := range v {
			if strings.HasPrefix(name, "source_mix_share/") {
				names = append(names, name)
			}
		}
		sort.Strings(names)
		for _, name := range names {
			x := v[name]
			src := strings.TrimPrefix(name, "source_mix_share/")
			tgt, ok := r.targetAt(s.Step, src)
			if !ok || !finite(x) {
				continue
			}
			rg := r.mix[src]
			if rg == nil {
				rg = newRing(r.cfg.Window)
				r.mix[src] = rg
			}
			// The ring holds share − target, so a window that straddles a
			// stage boundary compares each step with its own stage.
			rg.push(x - tgt)
			if rg.full {
				if d := rg.mean(); math.Abs(d) > r.cfg.MixDrift {
					msg := fmt.Sprintf("source %s: mean share %.3f over %d steps vs target %.3f", src, tgt+d, r.cfg.Window, tgt)
					if len(r.stages) > 1 {
						msg = fmt.Sprintf("source %s: share differs by %+.3f (mean over %d steps) from the weights of the data stages in force (now %.3f, the stage from step %d)", src, d, r.cfg.Window, tgt, r.stageStart(s.Step))
					}
					r.fire(&out, s, RuleMixDrift, name, tgt+d, tgt, msg)
				}
			}
		}
	}
	// SEV1: flat loss after warm-up; SEV2/SEV1 checkpoint rules on
	// checkpoint records (kestrel watch feeds them as samples).
	r.flatLoss(&out, s)
	r.checkpointValues(&out, s)
	// SEV0/SEV1/SEV2: optimizer state, memory creep, lm_head growth (memrules.go).
	r.vitals(&out, s)
	// SEV1: MoE routing (moe.go).
	r.moe(&out, s)
	// SEV2: dataloader stalls.
	if x, ok := get("dataloader_stall_frac"); ok && finite(x) {
		r.stall.push(x)
		if r.stall.full {
			if m := r.stall.mean(); m > r.cfg.StallFrac {
				r.fire(&out, s, RuleStall, "dataloader_stall_frac", m, r.cfg.StallFrac,
					fmt.Sprintf("dataloader_stall_frac %.0f%% (mean of %d steps) > %.0f%%", 100*m, r.cfg.Window, 100*r.cfg.StallFrac))
			}
		}
	}
	return out
}

// clipRates returns the clip rate of the last window steps, the rate of
// the (up to clip_baseline) steps before them and their number; ok is
// false until the baseline holds at least window steps.
func (r *rules) clipRates() (cur, base float64, n int, ok bool) {
	all := r.clips.values()
	w := r.cfg.Window
	if len(all) < 2*w {
		return 0, 0, 0, false
	}
	return meanOf(all[len(all)-w:]), meanOf(all[:len(all)-w]), len(all) - w, true
}

// throughput feeds the throughput windows and runs the drop rule on
// tokens_per_sec and mfu. Steps that include an evaluation or a checkpoint
// are slow by design and left out.
func (r *rules) throughput(out *[]Alert, s *Sample) {
	v := s.Values
	if v["eval_time"] > 0 || v["checkpoint_time"] > 0 {
		return
	}
	// CPU time per token beside wall time per token (1/tokens_per_sec), in
	// step with the tokens_per_sec window.
	if tps, ok := v["tokens_per_sec"]; ok && finite(tps) {
		cpu, st := v["cpu_time"], v["step_time"]
		if finite(cpu) && cpu > 0 && finite(st) && st > 0 && tps > 0 {
			r.cpuTok.push(cpu / (tps * st))
			r.wallStep.push(st)
			r.cpuStep.push(cpu)
		} else {
			r.cpuTok.push(math.NaN())
			r.wallStep.push(math.NaN())
			r.cpuStep.push(math.NaN())
		}
		if r.witness == nil {
			r.witness = &witnessRings{steal: newRing(r.cfg.Window), preempt: newRing(r.cfg.Window), wait: newRing(r.cfg.Window)}
		}
		r.witness.push(v)
	}
	r.drop(out, s, "tokens_per_sec", r.tps)
	r.drop(out, s, "mfu", r.mfu)
}

// drop fires when the short median of name falls ThroughputDrop below the
// median of the window before it: SEV2 contention when a second witness
// (cpu_steal_frac, involuntary_ctx_switches: contention.go) saw other work
// take the cores, else SEV1 throughput_drop; without a witness in the
// samples, contention when the process CPU time per token rose by less
// than ContentionShare of the wall-time rise, as the message then says.
// Contention and throughput_drop are one incident: within the cooldown of
// either, neither fires again.
func (r *rules) drop(out *[]Alert, s *Sample, name string, rg *ring) {
	x, ok := s.Values[name]
	if !ok || !finite(x) {
		return
	}
	rg.push(x)
	if !rg.full {
		return
	}
	all := rg.values()
	short := max(8, len(all)/4)
	ref := median(append([]float64(nil), all[:len(all)-short]...))
	now := median(append([]float64(nil), all[len(all)-short:]...))
	if !(ref > 0 && now < (1-r.cfg.ThroughputDrop)*ref) {
		return
	}
	for _, rule := range []string{RuleContention, RuleThroughputDrop} {
		if last, ok := r.lastFired[rule]; ok && s.Step-last < int64(max(1, r.cfg.Cooldown)) {
			return // the incident is open: the same evidence, not a second page
		}
	}
	thr := (1 - r.cfg.ThroughputDrop) * ref
	msg := fmt.Sprintf("%s median of the last %d steps %.4g is %.0f%% below the preceding median %.4g", name, short, now, 100*(1-now/ref), ref)
	cpuSeen, cpuLags, cpuEv := false, false, ""
	if cpuRef, cpuNow, ok := splitMedians(r.cpuTok, short); ok && cpuRef > 0 {
		wallRise, cpuRise := ref/now-1, cpuNow/cpuRef-1
		wRef, wNow, _ := splitMedians(r.wallStep, short)
		cRef, cNow, _ := splitMedians(r.cpuStep, short)
		cpuSeen, cpuLags = true, cpuRise < r.cfg.ContentionShare*wallRise
		cpuEv = fmt.Sprintf("wall time per step (median) %.4g s → %.4g s, process CPU time per step (median) %.4g s → %.4g s; per token wall time grew %.0f%%, CPU time %s",
			wRef, wNow, cRef, cNow, 100*wallRise, riseText(cpuRise))
	}
	var wit witnessVerdict
	if r.witness != nil {
		wallRise := math.NaN()
		if wRef, wNow, ok := splitMedians(r.wallStep, short); ok {
			wallRise = wNow - wRef
		}
		wit = r.witness.verdict(short, wallRise)
	}
	switch {
	case wit.says:
		msg += "; other work holds the cores: " + wit.evidence
		if cpuSeen {
			msg += "; " + cpuEv
		}
		r.fire(out, s, RuleContention, name, now, thr, msg)
	case wit.seen:
		msg += "; no other work seen on the cores (" + wit.evidence + ")"
		if cpuSeen {
			msg += ": " + cpuEv
		}
		r.fire(out, s, RuleThroughputDrop, name, now, thr, msg)
	case cpuSeen && cpuLags:
		r.fire(out, s, RuleContention, name, now, thr, msg+fmt.Sprintf("; CPU time per token grew less than %.0f%% of the wall-time rise, so other work holds the cores (judged on CPU time alone: the samples carry no second witness, cpu_steal_frac or involuntary_ctx_switches): ", 100*r.cfg.ContentionShare)+cpuEv)
	case cpuSeen:
		r.fire(out, s, RuleThroughputDrop, name, now, thr, msg+"; kestrel's own CPU time grew with it (no second witness in the samples): "+cpuEv)
	default:
		r.fire(out, s, RuleThroughputDrop, name, now, thr, msg)
	}
}

// splitMedians returns the medians of the finite values of rg before and
// in its last short entries; ok is false unless rg is full and each part
// has at least half of its entries finite.
func splitMedians(rg *ring, short int) (ref, now float64, ok bool) {
	if !rg.full {
		return 0, 0, false
	}
	all := rg.values()
	if short >= len(all) {
		return 0, 0, false
	}
	fin := func(xs []float64) []float64 {
		var out []float64
		for _, x := range xs {
			if finite(x) {
				out = append(out, x)
			}
		}
		return out
	}
	a, b := fin(all[:len(all)-short]), fin(all[len(all)-short:])
	if 2*len(a) < len(all)-short || 2*len(b) < short {
		return 0, 0, false
	}
	return median(a), median(b), true
}

// divergence is the SEV0 rule of a run that blew up. It holds from the
// first step of every start, resume and rollback, because two of its
// criteria need no history:
//
//   - train_loss_raw above ln V + divergence_loss_margin (worse than a
//     uniform prediction by a margin) for divergence_steps consecutive steps;
//   - update_to_weight above divergence_update_abs (one update as large as
//     the weights it changes).
//
// Beside them the windowed criteria run once divergence_min_samples values
// are in their windows (seeded from the run's own history on a resume:
// Monitor.Seed): train_loss_raw above max(divergence_loss_factor × its
// window median, ln V) for divergence_steps consecutive steps, or
// update_to_weight above max(divergence_update_factor × its window median,
// divergence_update_min). The baselines are frozen while the criteria hold:
// a value above its bound never enters the window it is judged by, so
// diverged losses cannot raise the bound. (val_loss above ln V is checked
// in val.)
func (r *rules) divergence(out *[]Alert, s *Sample) {
	v := s.Values
	if x, ok := v["train_loss_raw"]; ok && finite(x) {
		r.divergenceLoss(out, s, x)
	}
	if x, ok := v["update_to_weight"]; ok && finite(x) && x > 0 {
		r.divergenceUpdate(out, s, x)
	}
}

// divergenceLoss is divergence's train-loss criteria (see divergence).
func (r *rules) divergenceLoss(out *[]Alert, s *Sample, x float64) {
	abs := math.Inf(1)
	if finite(r.lnV) {
		abs = r.lnV + r.cfg.DivergenceLossMargin
	}
	rel, med := math.Inf(1), math.NaN()
	if r.losses.len() >= r.cfg.DivergenceMinSamples {
		med = median(r.losses.values())
		rel = r.cfg.DivergenceLossFactor * med
		if finite(r.lnV) {
			rel = math.Max(rel, r.lnV)
		}
	}
	bound := math.Min(abs, rel)
	if x > bound {
		r.divRun++
	} else {
		r.divRun = 0
		r.losses.push(x) // frozen while above: a diverged loss never raises its own bound
	}
	if r.divRun < r.cfg.DivergenceSteps {
		return
	}
	var why []string
	if x > rel {
		why = append(why, fmt.Sprintf("%.3g × its window median %.4g", r.cfg.DivergenceLossFactor, med))
	}
	if x > abs {
		why = append(why, fmt.Sprintf("ln V + divergence_loss_margin = %.4g + %.3g, worse than a uniform prediction", r.lnV, r.cfg.DivergenceLossMargin))
	} else if finite(r.lnV) && x > rel {
		why = append(why, fmt.Sprintf("ln V = %.4g, the loss of a uniform prediction", r.lnV))
	}
	r.fire(out, s, RuleDivergence, "train_loss_raw", x, bound,
		fmt.Sprintf("train_loss_raw %.4g above %.4g for %d consecutive steps (%s)", x, bound, r.divRun, strings.Join(why, "; ")))
}

// divergenceUpdate is divergence's update_to_weight criteria (see
// divergence).
func (r *rules) divergenceUpdate(out *[]Alert, s *Sample, x float64) {
	if x > r.cfg.DivergenceUpdateAbs {
		r.fire(out, s, RuleDivergence, "update_to_weight", x, r.cfg.DivergenceUpdateAbs,
			fmt.Sprintf("update_to_weight %.4g > divergence_update_abs %.3g: this update was as large as the weights it changed", x, r.cfg.DivergenceUpdateAbs))
		return // never part of the baseline
	}
	if r.u2w.len() >= r.cfg.DivergenceMinSamples {
		med := median(r.u2w.values())
		if bound := math.Max(r.cfg.DivergenceUpdateFactor*med, r.cfg.DivergenceUpdateMin); x > bound {
			r.fire(out, s, RuleDivergence, "update_to_weight", x, bound,
				fmt.Sprintf("update_to_weight %.4g is %.0f× its window median %.4g (bound %.4g): this update rewrote the weights", x, x/med, med, bound))
			return
		}
		// Against the last 8 updates, so that a planned change of the LR
		// (a decay, a re-warm-up over several steps) moves the baseline
		// with it while a jump does not.
		all := r.u2w.values()
		recent := median(all[max(0, len(all)-8):])
		if rise := math.Max(r.cfg.DivergenceUpdateRise*recent, r.cfg.DivergenceUpdateMin/10); x > rise {
			r.u2wRun++
			if r.u2wRun >= r.cfg.DivergenceSteps {
				r.fire(out, s, RuleDivergence, "update_to_weight", x, rise,
					fmt.Sprintf("update_to_weight %.4g has stayed above %.3g × the median %.4g of the updates before it (bound %.4g) for %d consecutive steps: the learning rate is too high at every step", x, r.cfg.DivergenceUpdateRise, recent, rise, r.u2wRun))
			}
			return // frozen: the raised updates never become the baseline
		}
	}
	r.u2wRun = 0
	r.u2w.push(x)
}

// val checks a new val_loss: SEV0 divergence when it is worse than a
// uniform prediction (ln V + divergence_val_margin), and the slow-regression
// rule.
func (r *rules) val(step, tokens int64, x float64) []Alert {
	if !finite(x) {
		return nil
	}
	var out []Alert
	s := &Sample{Step: step, Tokens: tokens}
	if finite(r.lnV) && x > r.lnV+r.cfg.DivergenceValMargin {
		r.fire(&out, s, RuleDivergence, "val_loss", x, r.lnV+r.cfg.DivergenceValMargin,
			fmt.Sprintf("val_loss %.4g is worse than a uniform prediction: ln V = %.4g (+ margin %.3g nats)", x, r.lnV, r.cfg.DivergenceValMargin))
	}
	r.vals = append(r.vals, x)
	n := r.cfg.ValRegressEvals
	if n <= 0 || len(r.vals) < n+1 {
		return out
	}
	last := r.vals[len(r.vals)-n-1:]
	for i := 1; i < len(last); i++ {
		if last[i] <= last[i-1] {
			return out
		}
	}
	r.fire(&out, s, RuleValRegression, "val_loss", x, last[0],
		fmt.Sprintf("val_loss rose in %d consecutive evals: %.4g → %.4g", n, last[0], x))
	return out
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

// stageStart is the first step of the data stage in force at step.
func (r *rules) stageStart(step int64) int64 {
	i := sort.Search(len(r.stages), func(i int) bool { return r.stages[i].StartStep > step }) - 1
	if i < 0 {
		return 0
	}
	return r.stages[i].StartStep
}

// flatLoss is seed 000's red flag "flat loss early (after warm-up)": for
// flat_loss_windows windows of window steps after warm-up, the median
// train_loss_raw of each must fall flat_loss_drop below that of the window
// before it (window 0 is the last window of warm-up). A window seen with
// fewer than 4 samples (a resumed run, a sparse log) is not compared. The
// end of warm-up is the configured warm-up, else the last step at which
// learning_rate rose, else step 0 when the samples carry no learning_rate.
func (r *rules) flatLoss(out *[]Alert, s *Sample) {
	f := &r.flat
	if f.done || r.cfg.FlatLossWindows <= 0 {
		return
	}
	x, ok := s.Values["train_loss_raw"]
	if !ok || !finite(x) {
		return
	}
	w := int64(r.cfg.Window)
	if f.warm < 0 {
		lr, has := s.Values["learning_rate"]
		switch {
		case !has || !finite(lr):
			if math.IsNaN(f.lastLR) {
				f.warm = 0 // no schedule to read: count from the start
			}
		case !math.IsNaN(f.lastLR) && lr <= f.lastLR:
			f.warm = max(0, s.Step-1)
		default:
			f.lastLR = lr
		}
	}
	f.recent = append(f.recent, stepLoss{s.Step, x})
	if f.warm < 0 {
		if len(f.recent) > 2*r.cfg.Window {
			f.recent = f.recent[len(f.recent)-r.cfg.Window:]
		}
		return
	}
	// window index of a step: 0 for (warm−w, warm], k for (warm+(k−1)w, warm+kw]
	idx := func(step int64) int64 {
		if step <= f.warm {
			if step > f.warm-w {
				return 0
			}
			return -1
		}
		return (step - f.warm + w - 1) / w
	}
	cur := idx(s.Step)
	// Close every window that ended before this step.
	var keep []stepLoss
	byWin := map[int64][]float64{}
	for _, p := range f.recent {
		k := idx(p.step)
		if k < 0 {
			continue
		}
		if k < cur || s.Step == f.warm+k*w {
			byWin[k] = append(byWin[k], p.loss)
		} else {
			keep = append(keep, p)
		}
	}
	f.recent = keep
	wins := make([]int64, 0, len(byWin))
	for k := range byWin {
		wins = append(wins, k)
	}
	sort.Slice(wins, func(i, j int) bool { return wins[i] < wins[j] })
	for _, k := range wins {
		ls := byWin[k]
		if len(ls) < 4 {
			f.meds[k] = math.NaN()
		} else {
			f.meds[k] = median(ls)
		}
		if k >= int64(r.cfg.FlatLossWindows) {
			f.done = true
		}
		prev, okPrev := f.meds[k-1]
		now := f.meds[k]
		if k < 1 || !okPrev || !finite(prev) || !finite(now) || prev == 0 {
			continue
		}
		if drop := (prev - now) / math.Abs(prev); drop < r.cfg.FlatLossDrop {
			from := f.warm + (k-1)*w + 1
			r.fire(out, s, RuleFlatLoss, "train_loss_raw", now, prev*(1-r.cfg.FlatLossDrop),
				fmt.Sprintf("train_loss_raw median %.4g over steps %d-%d after warm-up (ends at step %d) is %.2f%% below the %.4g of the %d steps before, less than flat_loss_drop %.2f%%: the run is not learning",
					now, from, from+w-1, f.warm, 100*drop, prev, w, 100*r.cfg.FlatLossDrop))
			f.done = true
		}
	}
}

// checkpointValues runs the checkpoint rules on a sample: a checkpoint
// record of a watched run (checkpoint_time and output_kl_to_prev at the
// checkpoint's step), or a step record whose checkpoint_time is the
// checkpoint written after the previous step. Each checkpoint counts once.
func (r *rules) checkpointValues(out *[]Alert, s *Sample) {
	v := s.Values
	_, stepRec := v["train_loss_raw"]
	if _, ok := v["step_time"]; ok {
		stepRec = true
	}
	if x, ok := v["checkpoint_time"]; ok && finite(x) && x > 0 {
		key := s.Step
		if stepRec {
			key = s.Step - 1
		}
		r.checkpointTime(out, s, key, x)
	}
	if x, ok := v["output_kl_to_prev"]; ok && finite(x) && !stepRec {
		r.outputKL(out, s, s.Step, x)
	}
	if !stepRec {
		r.checkpointVitals(out, s, v, false) // ckptrules.go
	}
}

// checkpoint runs the checkpoint rules on a committed checkpoint's values.
func (r *rules) checkpoint(step, tokens int64, v map[string]float64) []Alert {
	var out []Alert
	s := &Sample{Step: step, Tokens: tokens}
	if x, ok := v["checkpoint_time"]; ok && finite(x) && x > 0 {
		r.checkpointTime(&out, s, step, x)
	}
	if x, ok := v["output_kl_to_prev"]; ok && finite(x) {
		r.outputKL(&out, s, step, x)
	}
	r.checkpointVitals(&out, s, v, true) // ckptrules.go
	return out
}

// checkpointTime is checkpoint_time_growth: a checkpoint slower than
// checkpoint_time_factor × the median of the run's first (up to 3)
// checkpoints, by more than checkpoint_time_min seconds.
func (r *rules) checkpointTime(out *[]Alert, s *Sample, key int64, x float64) {
	if key == r.ckLast {
		return
	}
	r.ckLast = key
	if n := len(r.ckTimes); n >= 2 {
		base := median(append([]float64(nil), r.ckTimes[:min(3, n)]...))
		if thr := math.Max(r.cfg.CheckpointTimeFactor*base, base+r.cfg.CheckpointTimeMin); x > thr {
			r.fire(out, s, RuleCheckpointSlow, "checkpoint_time", x, thr,
				fmt.Sprintf("checkpoint at step %d took %.3g s, %.1f× the median %.3g s of the run's first %d checkpoints (last %.3g s)", key, x, x/base, base, min(3, n), r.ckTimes[n-1]))
		}
	}
	r.ckTimes = append(r.ckTimes, x)
}

// outputKL is output_kl_spike: output_kl_to_prev above kl_spike_factor ×
// the median of the previous (up to 3) checkpoints' values and
// kl_spike_min, once at least 2 earlier checkpoints measured it.
func (r *rules) outputKL(out *[]Alert, s *Sample, key int64, x float64) {
	if key == r.klLast {
		return
	}
	r.klLast = key
	if n := len(r.kls); n >= 2 {
		ref := median(append([]float64(nil), r.kls[max(0, n-3):]...))
		if thr := math.Max(r.cfg.KLSpikeFactor*ref, r.cfg.KLSpikeMin); x > thr {
			msg := fmt.Sprintf("output_kl_to_prev %.4g nats at the checkpoint of step %d is %.1f× the median %.4g of the previous %d checkpoints: the model's outputs on the probe batch changed abruptly", x, key, x/ref, ref, min(3, n))
			if k := len(r.evals); k >= 2 {
				a, b := r.evals[k-2], r.evals[k-1]
				if finite(a.val) && finite(b.val) {
					msg += fmt.Sprintf("; val_loss %.4g at step %d → %.4g at step %d", a.val, a.step, b.val, b.step)
				}
			}
			r.fire(out, s, RuleKLSpike, "output_kl_to_prev", x, thr, msg)
		}
	}
	r.kls = append(r.kls, x)
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

// eval runs every evaluation rule on one evaluation's values: divergence
// and val_regression on val_loss (val), fixed_probe_discontinuity,
// train_val_gap_widening and slice_val_regression.
func (r *rules) eval(step, tokens int64, v map[string]float64) []Alert {
	var out []Alert
	if x, ok := v["val_loss"]; ok {
		out = r.val(step, tokens, x)
	}
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
	s := &Sample{Step: step, Tokens: tokens}
	r.probeJump(&out, s, p)
	r.valJump(&out, s, p) // gaprules.go
	r.evals = append(r.evals, p)
	r.gapWidening(&out, s)
	r.sliceRegression(&out, s)
	r.benchRegression(&out, s)
	return out
}

// probeJump is fixed_probe_discontinuity: fixed_probe_loss moved from the
// previous eval that measured it by more than fixed_probe_jump nats beyond
// what val_loss moved over the same evals.
func (r *rules) probeJump(out *[]Alert, s *Sample, p evalPoint) {
	if !finite(p.probe) {
		return
	}
	for i := len(r.evals) - 1; i >= 0; i-- {
		q := r.evals[i]
		if !finite(q.probe) {
			continue
		}
		d := p.probe - q.probe
		resid, how := d, ""
		if finite(p.val) && finite(q.val) {
			resid = d - (p.val - q.val)
			how = fmt.Sprintf(" while val_loss moved %+.4g", p.val-q.val)
		}
		if math.Abs(resid) > r.cfg.FixedProbeJump {
			r.fire(out, s, RuleProbeJump, "fixed_probe_loss", p.probe, q.probe+math.Copysign(r.cfg.FixedProbeJump, d),
				fmt.Sprintf("fixed_probe_loss %.4g → %.4g (%+.4g) between the evals of steps %d and %d%s: the frozen probe batch jumped by %.3g nats more than the model's val loss (fixed_probe_jump %.3g)",
					q.probe, p.probe, d, q.step, p.step, how, math.Abs(resid), r.cfg.FixedProbeJump))
		}
		return
	}
}

// lastEvals returns the last n evals for which ok holds, if the last n
// evals that have a val_loss all do (oldest first).
func (r *rules) lastEvals(n int, ok func(evalPoint) bool) []evalPoint {
	var got []evalPoint
	for i := len(r.evals) - 1; i >= 0 && len(got) < n; i-- {
		e := r.evals[i]
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

// gapWidening is train_val_gap_widening: train_val_gap, positive at the
// start, grew at each of the last gap_widen_evals evals, by gap_widen nats
// in all, while val_loss
// improved by less than the gap grew: the model fits the train stream
// faster than it generalises (overfitting, or a train/val mismatch).
func (r *rules) gapWidening(out *[]Alert, s *Sample) {
	n := r.cfg.GapWidenEvals
	if n <= 0 {
		return
	}
	es := r.lastEvals(n+1, func(e evalPoint) bool { return finite(e.gap) })
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
	if first.gap < 0 || widen < r.cfg.GapWiden || improve >= widen {
		return
	}
	r.fire(out, s, RuleGapWidening, "train_val_gap", last.gap, first.gap+r.cfg.GapWiden,
		fmt.Sprintf("train_val_gap widened at each of the last %d evals, %.4g → %.4g (+%.3g nats, steps %d-%d), while val_loss improved only %.3g (%.4g → %.4g)",
			n, first.gap, last.gap, widen, first.step, last.step, improve, first.val, last.val))
}

// sliceRegression is slice_val_regression: a source's slice_val_loss rose
// at each of the last slice_regress_evals evals, by slice_regress_min nats
// in all, while val_loss fell or rose by less than half as much — the
// aggregate hides a regression of one source. A source whose weight a data
// stage lowered over the same evals is expected to regress and is left
// out (a planned curriculum).
func (r *rules) sliceRegression(out *[]Alert, s *Sample) {
	n := r.cfg.SliceRegressEvals
	if n <= 0 || len(r.evals) == 0 {
		return
	}
	latest := r.evals[len(r.evals)-1]
	srcs := make([]string, 0, len(latest.slices))
	for src := range latest.slices {
		srcs = append(srcs, src)
	}
	sort.Strings(srcs)
	for _, src := range srcs {
		es := r.lastEvals(n+1, func(e evalPoint) bool { _, ok := e.slices[src]; return ok })
		if es == nil {
			continue
		}
		rising := true
		for i := 1; i < len(es); i++ {
			if es[i].slices[src] <= es[i-1].slices[src] {
				rising = false
				break
			}
		}
		first, last := es[0], es[len(es)-1]
		rise, valRise := last.slices[src]-first.slices[src], last.val-first.val
		if !rising || rise < r.cfg.SliceRegressMin || valRise >= rise/2 {
			continue
		}
		if w0, ok0 := r.targetAt(first.step, src); ok0 {
			if w1, ok1 := r.targetAt(last.step, src); ok1 && w1 < w0 {
				continue // a stage lowered this source's weight: planned
			}
		}
		r.fire(out, s, RuleSliceRegression, "slice_val_loss/"+src, last.slices[src], first.slices[src]+r.cfg.SliceRegressMin,
			fmt.Sprintf("slice_val_loss/%s rose at each of the last %d evals, %.4g → %.4g (+%.3g nats, steps %d-%d), while val_loss went %.4g → %.4g",
				src, n, first.slices[src], last.slices[src], rise, first.step, last.step, first.val, last.val))
	}
}

// benchRegression is bench_regression: an in-loop benchmark got worse at
// each of the last bench_regress_evals evaluations that measured it (an
// accuracy fell, a bits per byte rose), by more than its noise in all.
func (r *rules) benchRegression(out *[]Alert, s *Sample) {
	n := r.cfg.BenchRegressEvals
	if n <= 0 || len(r.evals) == 0 {
		return
	}
	latest := r.evals[len(r.evals)-1]
	names := make([]string, 0, len(latest.bench))
	for k := range latest.bench {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, name := range names {
		// the last n+1 evaluations that measured it, oldest first
		var es []evalPoint
		for i := len(r.evals) - 1; i >= 0 && len(es) <= n; i-- {
			if _, ok := r.evals[i].bench[name]; ok {
				es = append(es, r.evals[i])
			}
		}
		if len(es) <= n {
			continue
		}
		slices.Reverse(es)
		lower := strings.HasPrefix(name, "bpb/") // bits per byte: lower is better
		worse := func(a, b float64) bool { return (lower && b > a) || (!lower && b < a) }
		worsening := true
		for i := 1; i < len(es); i++ {
			if !worse(es[i-1].bench[name], es[i].bench[name]) {
				worsening = false
				break
			}
		}
		if !worsening {
			continue
		}
		first, last := es[0].bench[name], es[len(es)-1].bench[name]
		change := math.Abs(last - first)
		var thr float64
		var noise string
		if lower {
			thr = r.cfg.BenchRegressBPB * math.Abs(first)
			noise = fmt.Sprintf("bench_regress_bpb %.3g of %.4g", r.cfg.BenchRegressBPB, first)
		} else {
			se0, ok0 := es[0].benchSE[name]
			se1, ok1 := es[len(es)-1].benchSE[name]
			if ok0 && ok1 {
				thr = r.cfg.BenchRegressSigma * math.Hypot(se0, se1)
				noise = fmt.Sprintf("%.3g standard errors of the difference, ±%.4g", r.cfg.BenchRegressSigma, math.Hypot(se0, se1))
			} else {
				thr = r.cfg.BenchRegressSigma * 0.01
				noise = fmt.Sprintf("%.3g points (no standard error recorded)", thr*100)
			}
		}
		if change <= thr {
			continue
		}
		bound := first - thr
		verb := "fell"
		if lower {
			bound, verb = first+thr, "rose"
		}
		r.fire(out, s, RuleBenchRegression, name, last, bound,
			fmt.Sprintf("%s %s at each of the last %d benchmark evaluations, %.4g → %.4g (steps %d-%d), by more than the noise (%s); val_loss %.4g → %.4g",
				name, verb, n, first, last, es[0].step, es[len(es)-1].step, noise, es[0].val, es[len(es)-1].val))
	}
}
