package monitor

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// rules holds the state of every alert rule. It is driven by Monitor.
type rules struct {
	cfg       Config
	targets   map[string]float64
	lastFired map[string]int64

	skips    *ring
	clips    *ring // clip_baseline + window clip flags
	tps      *ring
	mfu      *ring
	cpuTok   *ring // process CPU seconds per token, beside tps (NaN = not measured)
	wallStep *ring // step_time, beside tps
	cpuStep  *ring // cpu_time, beside tps
	losses   *ring // train_loss_raw (divergence baseline)
	u2w      *ring // update_to_weight of applied steps (divergence baseline)
	divRun   int   // consecutive steps with train_loss_raw above the divergence bound
	lnV      float64
	stall    *ring
	mix      map[string]*ring
	entropy  []float64 // early-run worst entropies (baseline)
	entBase  float64
	capSteps int
	vals     []float64
	spikes   []int64 // steps of detected spikes (for clusters)
}

// newRules starts the rules; vocab is the model's output vocabulary size
// (0 = unknown: the divergence criteria that compare with ln V are off).
func newRules(cfg Config, targets map[string]float64, vocab int) *rules {
	lnV := math.NaN()
	if vocab > 1 {
		lnV = math.Log(float64(vocab))
	}
	return &rules{
		cfg: cfg, targets: targets, lastFired: map[string]int64{},
		skips: newRing(cfg.SkipStormSteps), clips: newRing(cfg.ClipBaseline + cfg.Window),
		tps: newRing(cfg.Window), mfu: newRing(cfg.Window), stall: newRing(cfg.Window),
		cpuTok: newRing(cfg.Window), wallStep: newRing(cfg.Window), cpuStep: newRing(cfg.Window),
		losses: newRing(cfg.Window), u2w: newRing(cfg.Window), lnV: lnV,
		mix: map[string]*ring{}, entBase: math.NaN(),
	}
}

// fire builds an alert unless the rule fired within the cooldown.
func (r *rules) fire(out *[]Alert, s *Sample, rule, metric string, value, thr float64, msg string) {
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
	// SEV1: throughput / MFU drop (SEV2 contention when CPU time did not grow).
	r.throughput(&out, s)
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

	// SEV2: mixture drift.
	if len(r.targets) > 0 {
		for name, x := range v {
			if !strings.HasPrefix(name, "source_mix_share/") || !finite(x) {
				continue
			}
			src := strings.TrimPrefix(name, "source_mix_share/")
			tgt, ok := r.targets[src]
			if !ok {
				continue
			}
			rg := r.mix[src]
			if rg == nil {
				rg = newRing(r.cfg.Window)
				r.mix[src] = rg
			}
			rg.push(x)
			if rg.full {
				if m := rg.mean(); math.Abs(m-tgt) > r.cfg.MixDrift {
					r.fire(&out, s, RuleMixDrift, name, m, tgt,
						fmt.Sprintf("source %s: mean share %.3f over %d steps vs target %.3f", src, m, r.cfg.Window, tgt))
				}
			}
		}
	}
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
	}
	r.drop(out, s, "tokens_per_sec", r.tps)
	r.drop(out, s, "mfu", r.mfu)
}

// drop fires when the short median of name falls ThroughputDrop below the
// median of the window before it: SEV1 throughput_drop, or SEV2 contention
// when the process CPU time per token did not rise with the wall time.
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
	msg := fmt.Sprintf("%s median of the last %d steps %.4g is %.0f%% below the preceding median %.4g", name, short, now, 100*(1-now/ref), ref)
	if cpuRef, cpuNow, ok := splitMedians(r.cpuTok, short); ok && cpuRef > 0 {
		wallRise, cpuRise := ref/now-1, cpuNow/cpuRef-1
		wRef, wNow, _ := splitMedians(r.wallStep, short)
		cRef, cNow, _ := splitMedians(r.cpuStep, short)
		evidence := fmt.Sprintf("wall time per step (median) %.4g s → %.4g s, process CPU time per step (median) %.4g s → %.4g s; per token wall +%.0f%%, CPU %+.0f%%",
			wRef, wNow, cRef, cNow, 100*wallRise, 100*cpuRise)
		if cpuRise < r.cfg.ContentionShare*wallRise {
			r.fire(out, s, RuleContention, name, now, (1-r.cfg.ThroughputDrop)*ref,
				msg+"; CPU time did not grow with it, so other work holds the cores (neighbours, steal): "+evidence)
			return
		}
		msg += "; kestrel's own CPU time grew with it: " + evidence
	}
	r.fire(out, s, RuleThroughputDrop, name, now, (1-r.cfg.ThroughputDrop)*ref, msg)
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

// divergence is the SEV0 rule of a run that blew up: train_loss_raw above
// max(divergence_loss_factor × its window median, ln V) for
// divergence_steps consecutive steps, or update_to_weight above
// max(divergence_update_factor × its window median, divergence_update_min).
// (val_loss above ln V is checked in val.)
func (r *rules) divergence(out *[]Alert, s *Sample) {
	v := s.Values
	if x, ok := v["train_loss_raw"]; ok && finite(x) {
		if r.losses.len() >= r.cfg.Window/2 {
			med := median(r.losses.values())
			bound := r.cfg.DivergenceLossFactor * med
			if finite(r.lnV) {
				bound = math.Max(bound, r.lnV)
			}
			if x > bound {
				r.divRun++
			} else {
				r.divRun = 0
			}
			if r.divRun >= r.cfg.DivergenceSteps {
				msg := fmt.Sprintf("train_loss_raw %.4g above %.4g for %d consecutive steps (%.3g × its window median %.4g", x, bound, r.divRun, r.cfg.DivergenceLossFactor, med)
				if finite(r.lnV) {
					msg += fmt.Sprintf(", and ln V = %.4g, the loss of a uniform prediction", r.lnV)
				}
				r.fire(out, s, RuleDivergence, "train_loss_raw", x, bound, msg+")")
			}
		}
		r.losses.push(x)
	}
	if x, ok := v["update_to_weight"]; ok && finite(x) && x > 0 {
		if r.u2w.len() >= r.cfg.Window/2 {
			med := median(r.u2w.values())
			bound := math.Max(r.cfg.DivergenceUpdateFactor*med, r.cfg.DivergenceUpdateMin)
			if x > bound {
				r.fire(out, s, RuleDivergence, "update_to_weight", x, bound,
					fmt.Sprintf("update_to_weight %.4g is %.0f× its window median %.4g (bound %.4g): this update rewrote the weights", x, x/med, med, bound))
			}
		}
		r.u2w.push(x)
	}
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
