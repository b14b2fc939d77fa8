package monitor

import (
	"fmt"
	"math"
)

// checkpointRule is the checkpoint family: checkpoint_time_growth,
// output_kl_spike, checkpoint_failed after the write, opt_state_nonfinite
// in a checkpoint's record and checkpoint_size_jump. It judges a committed
// checkpoint's values (observeCheckpoint) and, for a watched run, the
// checkpoint records and step records that carry them (observe). Each
// checkpoint counts once.
type checkpointRule struct {
	ctx     *ruleCtx
	evals   *[]evalPoint // the evaluations so far, which output_kl_spike cites
	ckTimes []float64    // checkpoint_time of each checkpoint
	ckLast  int64        // step of the last checkpoint counted for checkpoint_time
	kls     []float64    // output_kl_to_prev of each checkpoint
	klLast  int64        // step of the last checkpoint counted for output_kl_to_prev
	sizes   []float64    // checkpoint_size of each checkpoint this monitor saw
	sizeK   int64        // step of the last checkpoint counted for checkpoint_size
}

func newCheckpointRule(c *ruleCtx, evals *[]evalPoint) *checkpointRule {
	return &checkpointRule{ctx: c, evals: evals, ckLast: math.MinInt64, klLast: math.MinInt64}
}

// observe runs the checkpoint rules on a sample: a checkpoint record of a
// watched run (checkpoint_time and output_kl_to_prev at the checkpoint's
// step), or a step record whose checkpoint_time is the checkpoint written
// after the previous step.
func (r *checkpointRule) observe(s *Sample, out *[]Alert) {
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
		r.checkpointVitals(out, s, v, false)
	}
}

// observeCheckpoint runs the checkpoint rules on a committed checkpoint's
// values.
func (r *checkpointRule) observeCheckpoint(s *Sample, v map[string]float64, out *[]Alert) {
	if x, ok := v["checkpoint_time"]; ok && finite(x) && x > 0 {
		r.checkpointTime(out, s, s.Step, x)
	}
	if x, ok := v["output_kl_to_prev"]; ok && finite(x) {
		r.outputKL(out, s, s.Step, x)
	}
	r.checkpointVitals(out, s, v, true)
}

// checkpointTime is checkpoint_time_growth: a checkpoint slower than
// checkpoint_time_factor × the median of the run's first (up to 3)
// checkpoints, by more than checkpoint_time_min seconds.
func (r *checkpointRule) checkpointTime(out *[]Alert, s *Sample, key int64, x float64) {
	cfg := r.ctx.cfg
	if key == r.ckLast {
		return
	}
	r.ckLast = key
	if n := len(r.ckTimes); n >= 2 {
		base := median(append([]float64(nil), r.ckTimes[:min(3, n)]...))
		if thr := math.Max(cfg.CheckpointTimeFactor*base, base+cfg.CheckpointTimeMin); x > thr {
			r.ctx.fire(out, s, RuleCheckpointSlow, "checkpoint_time", x, thr,
				fmt.Sprintf("checkpoint at step %d took %.3g s, %.1f× the median %.3g s of the run's first %d checkpoints (last %.3g s)", key, x, x/base, base, min(3, n), r.ckTimes[n-1]))
		}
	}
	r.ckTimes = append(r.ckTimes, x)
}

// outputKL is output_kl_spike: output_kl_to_prev above kl_spike_factor ×
// the median of the previous (up to 3) checkpoints' values and
// kl_spike_min, once at least 2 earlier checkpoints measured it.
func (r *checkpointRule) outputKL(out *[]Alert, s *Sample, key int64, x float64) {
	cfg := r.ctx.cfg
	if key == r.klLast {
		return
	}
	r.klLast = key
	if n := len(r.kls); n >= 2 {
		ref := median(append([]float64(nil), r.kls[max(0, n-3):]...))
		if thr := math.Max(cfg.KLSpikeFactor*ref, cfg.KLSpikeMin); x > thr {
			msg := fmt.Sprintf("output_kl_to_prev %.4g nats at the checkpoint of step %d is %.1f× the median %.4g of the previous %d checkpoints: the model's outputs on the probe batch changed abruptly", x, key, x/ref, ref, min(3, n))
			if es := *r.evals; len(es) >= 2 {
				a, b := es[len(es)-2], es[len(es)-1]
				if finite(a.val) && finite(b.val) {
					msg += fmt.Sprintf("; val_loss %.4g at step %d → %.4g at step %d", a.val, a.step, b.val, b.step)
				}
			}
			r.ctx.fire(out, s, RuleKLSpike, "output_kl_to_prev", x, thr, msg)
		}
	}
	r.kls = append(r.kls, x)
}

// checkpointVitals runs the checkpoint rules of a checkpoint's values:
// checkpoint_failed when checkpoint_ok is 0 (a checkpoint that failed its
// verification after the write; with ok false, as the per-step rule
// already judged a watched record), opt_state_nonfinite when the record
// carries opt_state_finite = 0, and checkpoint_size_jump.
func (r *checkpointRule) checkpointVitals(out *[]Alert, s *Sample, v map[string]float64, judgeOK bool) {
	if x, ok := v["checkpoint_ok"]; judgeOK && ok && x == 0 && !r.ctx.seeding {
		msg := fmt.Sprintf("checkpoint at step %d failed its verification after the write (checkpoint_error in metrics.jsonl and the checkpoint's confirmation.json name the file); it is never resumed from nor last-good", s.Step)
		*out = append(*out, newAlert(s.Step, s.Tokens, RuleCheckpointFailed, "checkpoint_ok", 0, 1, msg))
	}
	if x, ok := v["opt_state_finite"]; judgeOK && ok && x == 0 {
		r.ctx.fire(out, s, RuleOptStateNonFin, "opt_state_finite", 0, 1, fmt.Sprintf("opt_state_finite = 0 in the checkpoint of step %d", s.Step))
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
func (r *checkpointRule) checkpointSize(out *[]Alert, s *Sample, x float64) {
	if len(r.sizes) > 0 && s.Step == r.sizeK {
		return
	}
	r.sizeK = s.Step
	if f := r.ctx.cfg.CheckpointSizeFactor; f > 1 && len(r.sizes) > 0 {
		ref := median(append([]float64(nil), r.sizes[max(0, len(r.sizes)-3):]...))
		if ratio := x / ref; ratio > f || ratio < 1/f {
			thr := ref * f
			if ratio < 1 {
				thr = ref / f
			}
			r.ctx.fire(out, s, RuleCheckpointSize, "checkpoint_size", x, thr,
				fmt.Sprintf("checkpoint at step %d holds %s, %.2f× the median %s of the %d checkpoints before it (bound ×%.3g either way)",
					s.Step, byteCount(x), ratio, byteCount(ref), min(3, len(r.sizes)), f))
		}
	}
	r.sizes = append(r.sizes, x)
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
