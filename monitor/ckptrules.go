package monitor

import (
	"fmt"
	"math"
)

// checkpointVitals runs the checkpoint rules of a checkpoint's values:
// checkpoint_failed when checkpoint_ok is 0 (a checkpoint that failed its
// verification after the write; with ok false, as the per-step rule
// already judged a watched record), opt_state_nonfinite when the record
// carries opt_state_finite = 0, and checkpoint_size_jump.
func (r *rules) checkpointVitals(out *[]Alert, s *Sample, v map[string]float64, judgeOK bool) {
	if x, ok := v["checkpoint_ok"]; judgeOK && ok && x == 0 && !r.seeding {
		msg := fmt.Sprintf("checkpoint at step %d failed its verification after the write (checkpoint_error in metrics.jsonl and the checkpoint's confirmation.json name the file); it is never resumed from nor last-good", s.Step)
		*out = append(*out, newAlert(s.Step, s.Tokens, RuleCheckpointFailed, "checkpoint_ok", 0, 1, msg))
	}
	if x, ok := v["opt_state_finite"]; judgeOK && ok && x == 0 {
		r.fire(out, s, RuleOptStateNonFin, "opt_state_finite", 0, 1, fmt.Sprintf("opt_state_finite = 0 in the checkpoint of step %d", s.Step))
	}
	if x, ok := v["checkpoint_size"]; ok && finite(x) && x > 0 {
		r.checkpointSize(out, s, x)
	}
}

// checkpointSize is the SEV2 checkpoint_size_jump rule: a checkpoint
// more than checkpoint_size_factor times larger, or smaller, than the
// median of the (up to 3) checkpoints before it. A run's checkpoints hold
// the same tensors, so their sizes differ by a few bytes of state.json; a
// jump is a changed model or optimizer layout, a truncated or padded
// file, or a different writer. Each checkpoint counts once.
func (r *rules) checkpointSize(out *[]Alert, s *Sample, x float64) {
	v := &r.vit
	if len(v.sizes) > 0 && s.Step == v.sizeK {
		return
	}
	v.sizeK = s.Step
	if f := r.cfg.CheckpointSizeFactor; f > 1 && len(v.sizes) > 0 {
		ref := median(append([]float64(nil), v.sizes[max(0, len(v.sizes)-3):]...))
		if ratio := x / ref; ratio > f || ratio < 1/f {
			thr := ref * f
			if ratio < 1 {
				thr = ref / f
			}
			r.fire(out, s, RuleCheckpointSize, "checkpoint_size", x, thr,
				fmt.Sprintf("checkpoint at step %d holds %s, %.2f× the median %s of the %d checkpoints before it (bound ×%.3g either way)",
					s.Step, byteCount(x), ratio, byteCount(ref), min(3, len(v.sizes)), f))
		}
	}
	v.sizes = append(v.sizes, x)
}

// byteCount renders a byte count in MiB (or bytes when small).
func byteCount(x float64) string {
	if math.Abs(x) < 1<<20 {
		return fmt.Sprintf("%.0f bytes", x)
	}
	return fmt.Sprintf("%.1f MiB", x/(1<<20))
}

// validateVitals checks the keys of the vitals rules (memrules.go,
// ckptrules.go).
func (c Config) validateVitals() []error {
	var errs []error
	if c.MemoryCreepWindow < 0 || (c.MemoryCreepWindow > 0 && c.MemoryCreepWindow < memCreepBlocks) {
		errs = append(errs, fmt.Errorf("monitor.memory_creep_window must be 0 (off) or at least %d, got %d", memCreepBlocks, c.MemoryCreepWindow))
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"memory_creep_mb", c.MemoryCreepMB}, {"lm_head_growth", c.LMHeadGrowth}, {"lm_head_late_lr", c.LMHeadLateLR}} {
		if !(f.v >= 0) || math.IsInf(f.v, 0) {
			errs = append(errs, fmt.Errorf("monitor.%s must be a finite number >= 0, got %g", f.name, f.v))
		}
	}
	if f := c.CheckpointSizeFactor; !(f == 0 || f > 1) || math.IsInf(f, 0) {
		errs = append(errs, fmt.Errorf("monitor.checkpoint_size_factor must be 0 (off) or a finite number > 1, got %g", f))
	}
	return errs
}
