package monitor

import (
	"fmt"
	"math"
)

// attentionRule is the SEV1 attention family: attn_logit_runaway
// (max_attn_logit above attn_logit_red), attn_logit_above_cap (above the
// soft cap τ for a cooldown's worth of steps) and attn_entropy_collapse —
// a broad collapse, so the mean over heads when per-head values exist
// (single sharp heads are normal), else the worst, below
// entropy_collapse or below entropy_drop_frac of its early median.
type attentionRule struct {
	ctx      *ruleCtx
	capSteps int       // consecutive steps above the cap
	entropy  []float64 // early-run entropies (the baseline)
	entBase  float64   // their median once a window is in (NaN before)
}

func newAttentionRule(c *ruleCtx) *attentionRule {
	return &attentionRule{ctx: c, entBase: math.NaN()}
}

func (f *attentionRule) observe(s *Sample, out *[]Alert) {
	f.logits(s, out)
	f.collapse(s, out)
}

// logits is attn_logit_runaway and attn_logit_above_cap.
func (f *attentionRule) logits(s *Sample, out *[]Alert) {
	v, cfg := s.Values, f.ctx.cfg
	x, ok := v["max_attn_logit"]
	if !ok || !finite(x) {
		return
	}
	if x > cfg.AttnLogitRed {
		f.ctx.fire(out, s, RuleAttnLogitRunaway, "max_attn_logit", x, cfg.AttnLogitRed,
			fmt.Sprintf("max_attn_logit %.4g > %.4g%s", x, cfg.AttnLogitRed, worstSuffix(v, "max_attn_logit", true)))
	}
	if x <= cfg.AttnLogitCap {
		f.capSteps = 0
		return
	}
	f.capSteps++
	if f.capSteps >= max(1, cfg.Cooldown) {
		f.ctx.fire(out, s, RuleAttnLogitCap, "max_attn_logit", x, cfg.AttnLogitCap,
			fmt.Sprintf("max_attn_logit above τ = %.4g for %d steps (now %.4g%s)", cfg.AttnLogitCap, f.capSteps, x, worstSuffix(v, "max_attn_logit", true)))
	}
}

// collapse is attn_entropy_collapse.
func (f *attentionRule) collapse(s *Sample, out *[]Alert) {
	v, cfg := s.Values, f.ctx.cfg
	name := "attn_entropy"
	if _, ok := v["attn_entropy_mean"]; ok {
		name = "attn_entropy_mean"
	}
	x, ok := v[name]
	if !ok || !finite(x) {
		return
	}
	if len(f.entropy) < cfg.Window {
		f.entropy = append(f.entropy, x)
		if len(f.entropy) == cfg.Window {
			f.entBase = median(append([]float64(nil), f.entropy...))
		}
	}
	switch {
	case x < cfg.EntropyCollapse:
		f.ctx.fire(out, s, RuleEntropyCollapse, name, x, cfg.EntropyCollapse,
			fmt.Sprintf("%s %.4g nats < %.4g (worst%s)", name, x, cfg.EntropyCollapse, worstSuffix(v, "attn_entropy", false)))
	case finite(f.entBase) && x < cfg.EntropyDropFrac*f.entBase:
		f.ctx.fire(out, s, RuleEntropyCollapse, name, x, cfg.EntropyDropFrac*f.entBase,
			fmt.Sprintf("%s %.4g nats fell below %.0f%% of its early median %.4g (worst%s)", name, x, 100*cfg.EntropyDropFrac, f.entBase, worstSuffix(v, "attn_entropy", false)))
	}
}
