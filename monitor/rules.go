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
	clips    *ring // 2×window of clip flags
	tps      *ring
	mfu      *ring
	stall    *ring
	mix      map[string]*ring
	entropy  []float64 // early-run worst entropies (baseline)
	entBase  float64
	capSteps int
	vals     []float64
	spikes   []int64 // steps of detected spikes (for clusters)
}

func newRules(cfg Config, targets map[string]float64) *rules {
	return &rules{
		cfg: cfg, targets: targets, lastFired: map[string]int64{},
		skips: newRing(cfg.SkipStormSteps), clips: newRing(2 * cfg.Window),
		tps: newRing(cfg.Window), mfu: newRing(cfg.Window), stall: newRing(cfg.Window),
		mix: map[string]*ring{}, entBase: math.NaN(),
	}
}

// fire builds an alert unless the rule fired within the cooldown.
func (r *rules) fire(out *[]Alert, s *Sample, rule, metric string, value, thr float64, msg string) {
	key := rule + "|" + metric
	if rule == RuleThroughputDrop {
		// tokens_per_sec and mfu move together (mfu is tokens_per_sec times a
		// constant unless the model changes): one incident, not two pages.
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
	// SEV1: throughput / MFU drop.
	r.drop(&out, s, "tokens_per_sec", r.tps)
	r.drop(&out, s, "mfu", r.mfu)
	// SEV1: rising clip rate.
	if x, ok := get("grad_clipped"); ok {
		c := 0.0
		if x > 0 {
			c = 1
		}
		r.clips.push(c)
		if r.clips.full {
			all := r.clips.values()
			w := r.cfg.Window
			prev, cur := meanOf(all[:w]), meanOf(all[w:])
			if cur > r.cfg.ClipRate && cur > prev {
				r.fire(&out, s, RuleClipRate, "grad_clip_rate", cur, r.cfg.ClipRate,
					fmt.Sprintf("grad_clip_rate %.0f%% over the last %d steps (was %.0f%%)", 100*cur, w, 100*prev))
			}
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

// drop fires when the short median of name falls ThroughputDrop below the
// median of the window before it.
func (r *rules) drop(out *[]Alert, s *Sample, name string, rg *ring) {
	x, ok := s.Values[name]
	if !ok || !finite(x) {
		return
	}
	// Steps that include an evaluation or a checkpoint are slow by design.
	if s.Values["eval_time"] > 0 || s.Values["checkpoint_time"] > 0 {
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
	if ref > 0 && now < (1-r.cfg.ThroughputDrop)*ref {
		r.fire(out, s, RuleThroughputDrop, name, now, (1-r.cfg.ThroughputDrop)*ref,
			fmt.Sprintf("%s median of the last %d steps %.4g is %.0f%% below the preceding median %.4g", name, short, now, 100*(1-now/ref), ref))
	}
}

// val checks the slow-regression rule on a new val_loss.
func (r *rules) val(step, tokens int64, x float64) []Alert {
	if !finite(x) {
		return nil
	}
	r.vals = append(r.vals, x)
	n := r.cfg.ValRegressEvals
	if n <= 0 || len(r.vals) < n+1 {
		return nil
	}
	last := r.vals[len(r.vals)-n-1:]
	for i := 1; i < len(last); i++ {
		if last[i] <= last[i-1] {
			return nil
		}
	}
	var out []Alert
	s := &Sample{Step: step, Tokens: tokens}
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
