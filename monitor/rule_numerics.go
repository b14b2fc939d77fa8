package monitor

import (
	"fmt"
	"strings"
)

// numericsRule is the SEV0 family of a step whose numbers are broken:
// nan_inf (a non-finite loss, gradient or update, or nan_inf_events),
// checkpoint_failed reported as a value (checkpoint_ok = 0) and
// skip_storm (too many skipped or overflowed steps in a window).
type numericsRule struct {
	ctx   *ruleCtx
	skips *ring // 1 per skipped or overflowed step
}

func newNumericsRule(c *ruleCtx) *numericsRule {
	return &numericsRule{ctx: c, skips: newRing(c.cfg.SkipStormSteps)}
}

func (f *numericsRule) observe(s *Sample, out *[]Alert) {
	v, c := s.Values, f.ctx
	nonFinite := []string{}
	for _, n := range []string{"train_loss_raw", "grad_global_norm", "update_norm"} {
		if x, ok := v[n]; ok && !finite(x) {
			nonFinite = append(nonFinite, n)
		}
	}
	if x, ok := v["nan_inf_events"]; (ok && x > 0) || len(nonFinite) > 0 {
		if !ok || !finite(x) {
			x = 1
		}
		msg := fmt.Sprintf("nan_inf_events = %g at step %d", x, s.Step)
		if len(nonFinite) > 0 {
			msg += "; non-finite " + strings.Join(nonFinite, ", ")
		}
		c.fire(out, s, RuleNaNInf, "nan_inf_events", x, 0, msg)
	}
	if x, ok := v["checkpoint_ok"]; ok && x == 0 {
		c.fire(out, s, RuleCheckpointFailed, "checkpoint_ok", 0, 1, fmt.Sprintf("checkpoint_ok = 0 at step %d", s.Step))
	}
	skip := 0.0
	if x, ok := v["skipped"]; ok && x > 0 {
		skip = 1
	}
	if x, ok := v["overflow"]; ok && x > 0 {
		skip = 1
	}
	f.skips.push(skip)
	if f.skips.full {
		if m := f.skips.mean(); m > c.cfg.SkipStormFrac {
			c.fire(out, s, RuleSkipStorm, "skipped_updates", m, c.cfg.SkipStormFrac,
				fmt.Sprintf("%.0f%% of the last %d steps were skipped or overflowed", 100*m, c.cfg.SkipStormSteps))
		}
	}
}
