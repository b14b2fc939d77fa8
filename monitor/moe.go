package monitor

import "fmt"

// Mixture-of-experts routing rules (seed 004: "sustained moe_drop_rate > 0"
// is SEV1; dead experts are the other face of routing collapse).

// MoE rule names.
const (
	RuleMoEDrop       = "moe_drop_sustained"
	RuleMoEDeadExpert = "moe_dead_experts"
)

// moeRule is the MoE routing family, SEV1 moe_drop_sustained and
// moe_dead_experts, on a step sample's MoE vitals (absent for dense
// models: the rules stay silent). Its state is the consecutive steps over
// the thresholds.
type moeRule struct {
	ctx              *ruleCtx
	dropRun, deadRun int
}

func (f *moeRule) observe(s *Sample, out *[]Alert) {
	c := f.ctx
	if x, ok := s.Values["moe_drop_rate"]; ok && finite(x) {
		if x > c.cfg.MoEDropRate {
			f.dropRun++
		} else {
			f.dropRun = 0
		}
		if n := max(1, c.cfg.MoESustainSteps); f.dropRun >= n {
			c.fire(out, s, RuleMoEDrop, "moe_drop_rate", x, c.cfg.MoEDropRate,
				fmt.Sprintf("moe_drop_rate above %.3g for %d steps (now %.3g%s)", c.cfg.MoEDropRate, f.dropRun, x, worstSuffix(s.Values, "moe_drop_rate", true)))
		}
	}
	if x, ok := s.Values["moe_dead_experts"]; ok && finite(x) {
		if x > 0 {
			f.deadRun++
		} else {
			f.deadRun = 0
		}
		if n := max(1, c.cfg.MoESustainSteps); f.deadRun >= n {
			c.fire(out, s, RuleMoEDeadExpert, "moe_dead_experts", x, 0,
				fmt.Sprintf("%g experts received no token for %d steps (%s)", x, f.deadRun, worstSuffix(s.Values, "moe_dead_experts", true)))
		}
	}
}

// moeRunbooks are the runbooks of the MoE rules (SEV1).
var moeRunbooks = []Runbook{
	{RuleMoEDrop, SEV1, "MoE tokens dropped, sustained",
		"moe_drop_rate stayed above monitor.moe_drop_rate for monitor.moe_sustain_steps consecutive steps: experts overflow their capacity (model.moe_capacity_factor) and the dropped tokens skip the MoE block; Switch Transformers keep drops under 1%. Routing is collapsing onto a few experts or the capacity is too small.",
		"per-layer moe_drop_rate, moe_tokens_per_expert_max/min, moe_util_entropy and moe_load_balance_loss over the window; the config's moe_capacity_factor, moe_aux_loss_alpha, moe_balance.",
		"raise the balancing pressure or the capacity: `kestrel rewind RUN --to last --set model.moe_aux_loss_alpha=0.02 --reason …` (or `--set model.moe_capacity_factor=2`, or switch to `model.moe_balance = \"bias\"` for DeepSeek-V3's bias balancing) and rerun the same `kestrel train`; a capacity factor of 0 removes dropping altogether.",
		"moe_drop_rate returns to 0 (or under the threshold) and moe_util_entropy rises towards 1."},
	{RuleMoEDeadExpert, SEV1, "MoE dead experts",
		"moe_dead_experts > 0 for monitor.moe_sustain_steps consecutive steps: some experts receive no token at all, so they stop learning and the model runs with less capacity than it pays for (routing collapse).",
		"per-layer moe_dead_experts, moe_tokens_per_expert_min/max, moe_util_entropy and moe_load_balance_loss; the router's update_norm of the layer.",
		"restore balancing: `kestrel rewind RUN --to last --set model.moe_aux_loss_alpha=0.02 --reason …` (or `model.moe_balance = \"bias\"` with `model.moe_bias_update_rate`), lower the LR (`--lr-scale 0.5`), and rerun the same `kestrel train`.",
		"moe_dead_experts returns to 0 and moe_tokens_per_expert_min grows."},
}

func init() {
	// after the other SEV1 runbooks, before the SEV2 ones
	at := len(runbooks)
	for i, rb := range runbooks {
		if rb.Severity == SEV2 {
			at = i
			break
		}
	}
	runbooks = append(runbooks[:at], append(append([]Runbook(nil), moeRunbooks...), runbooks[at:]...)...)
	for _, rb := range moeRunbooks {
		runbookByRule[rb.Rule] = rb
	}
}
