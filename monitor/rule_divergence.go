package monitor

import (
	"fmt"
	"math"
	"strings"
)

// divergenceRule is the SEV0 rule of a run that blew up. It holds from the
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
// diverged losses cannot raise the bound. On an evaluation, val_loss above
// ln V + divergence_val_margin is a divergence too.
type divergenceRule struct {
	ctx    *ruleCtx
	losses *ring // train_loss_raw (divergence baseline)
	u2w    *ring // update_to_weight of applied steps (divergence baseline)
	divRun int   // consecutive steps with train_loss_raw above the divergence bound
	u2wRun int   // consecutive steps with update_to_weight above divergence_update_rise × its median
}

func newDivergenceRule(c *ruleCtx) *divergenceRule {
	return &divergenceRule{ctx: c, losses: newRing(c.cfg.Window), u2w: newRing(c.cfg.Window)}
}

func (f *divergenceRule) observe(s *Sample, out *[]Alert) {
	v := s.Values
	if x, ok := v["train_loss_raw"]; ok && finite(x) {
		f.loss(out, s, x)
	}
	if x, ok := v["update_to_weight"]; ok && finite(x) && x > 0 {
		f.update(out, s, x)
	}
}

// loss is the train-loss criteria.
func (f *divergenceRule) loss(out *[]Alert, s *Sample, x float64) {
	cfg, lnV := f.ctx.cfg, f.ctx.lnV
	abs := math.Inf(1)
	if finite(lnV) {
		abs = lnV + cfg.DivergenceLossMargin
	}
	rel, med := math.Inf(1), math.NaN()
	if f.losses.len() >= cfg.DivergenceMinSamples {
		med = median(f.losses.values())
		rel = cfg.DivergenceLossFactor * med
		if finite(lnV) {
			rel = math.Max(rel, lnV)
		}
	}
	bound := math.Min(abs, rel)
	if x > bound {
		f.divRun++
	} else {
		f.divRun = 0
		f.losses.push(x) // frozen while above: a diverged loss never raises its own bound
	}
	if f.divRun < cfg.DivergenceSteps {
		return
	}
	var why []string
	if x > rel {
		why = append(why, fmt.Sprintf("%.3g × its window median %.4g", cfg.DivergenceLossFactor, med))
	}
	if x > abs {
		why = append(why, fmt.Sprintf("ln V + divergence_loss_margin = %.4g + %.3g, worse than a uniform prediction", lnV, cfg.DivergenceLossMargin))
	} else if finite(lnV) && x > rel {
		why = append(why, fmt.Sprintf("ln V = %.4g, the loss of a uniform prediction", lnV))
	}
	f.ctx.fire(out, s, RuleDivergence, "train_loss_raw", x, bound,
		fmt.Sprintf("train_loss_raw %.4g above %.4g for %d consecutive steps (%s)", x, bound, f.divRun, strings.Join(why, "; ")))
}

// update is the update_to_weight criteria.
func (f *divergenceRule) update(out *[]Alert, s *Sample, x float64) {
	cfg := f.ctx.cfg
	if x > cfg.DivergenceUpdateAbs {
		f.ctx.fire(out, s, RuleDivergence, "update_to_weight", x, cfg.DivergenceUpdateAbs,
			fmt.Sprintf("update_to_weight %.4g > divergence_update_abs %.3g: this update was as large as the weights it changed", x, cfg.DivergenceUpdateAbs))
		return // never part of the baseline
	}
	if f.u2w.len() >= cfg.DivergenceMinSamples {
		med := median(f.u2w.values())
		if bound := math.Max(cfg.DivergenceUpdateFactor*med, cfg.DivergenceUpdateMin); x > bound {
			f.ctx.fire(out, s, RuleDivergence, "update_to_weight", x, bound,
				fmt.Sprintf("update_to_weight %.4g is %.0f× its window median %.4g (bound %.4g): this update rewrote the weights", x, x/med, med, bound))
			return
		}
		// Against the last 8 updates, so that a planned change of the LR
		// (a decay, a re-warm-up over several steps) moves the baseline
		// with it while a jump does not.
		all := f.u2w.values()
		recent := median(all[max(0, len(all)-8):])
		if rise := math.Max(cfg.DivergenceUpdateRise*recent, cfg.DivergenceUpdateMin/10); x > rise {
			f.u2wRun++
			if f.u2wRun >= cfg.DivergenceSteps {
				f.ctx.fire(out, s, RuleDivergence, "update_to_weight", x, rise,
					fmt.Sprintf("update_to_weight %.4g has stayed above %.3g × the median %.4g of the updates before it (bound %.4g) for %d consecutive steps: the learning rate is too high at every step", x, cfg.DivergenceUpdateRise, recent, rise, f.u2wRun))
			}
			return // frozen: the raised updates never become the baseline
		}
	}
	f.u2wRun = 0
	f.u2w.push(x)
}

// observeEval is the val_loss criterion: SEV0 divergence when an
// evaluation is worse than a uniform prediction (ln V +
// divergence_val_margin).
func (f *divergenceRule) observeEval(s *Sample, es []evalPoint, out *[]Alert) {
	x, lnV, cfg := es[len(es)-1].val, f.ctx.lnV, f.ctx.cfg
	if finite(x) && finite(lnV) && x > lnV+cfg.DivergenceValMargin {
		f.ctx.fire(out, s, RuleDivergence, "val_loss", x, lnV+cfg.DivergenceValMargin,
			fmt.Sprintf("val_loss %.4g is worse than a uniform prediction: ln V = %.4g (+ margin %.3g nats)", x, lnV, cfg.DivergenceValMargin))
	}
}
