package monitor

import (
	"fmt"
	"math"
)

// offTrackRule is the SEV2 off_track rule: the loss has sat above the run's
// own loss-vs-tokens fit beyond noise for off_track_steps consecutive
// judged steps. The trainer (internal/stepvitals/ontrack.go through
// internal/lossfit) reports the fit's reading of each step:
// scaling_law_residual, the median of train_loss_raw − loss_fit over the
// recent judged steps, and scaling_law_residual_z, that median ÷ its
// noise. A step without them (warm-up, re-warm-up, no fit yet, another
// trainer's log) is not judged and ends a stretch; a residual below the
// fit (a planned decay) never counts.
type offTrackRule struct {
	ctx    *ruleCtx
	offRun int // consecutive judged steps above the fit
}

func (f *offTrackRule) observe(s *Sample, out *[]Alert) {
	cfg := f.ctx.cfg
	if cfg.OffTrackSteps <= 0 {
		return
	}
	z, okz := s.Values["scaling_law_residual_z"]
	res, okr := s.Values["scaling_law_residual"]
	if !okz || !okr || !finite(z) || !finite(res) || z <= cfg.OffTrackZ || res <= cfg.OffTrackMin {
		f.offRun = 0
		return
	}
	f.offRun++
	if f.offRun < cfg.OffTrackSteps {
		return
	}
	msg := fmt.Sprintf("train_loss_raw has sat above the run's loss-vs-tokens fit for %d steps: median residual %.4g nats/token, %.1f× its noise (off_track_z %.3g)",
		f.offRun, res, z, cfg.OffTrackZ)
	if fit, ok := s.Values["loss_fit"]; ok && finite(fit) {
		msg += fmt.Sprintf("; fit %.4g at %d tokens", fit, s.Tokens)
	}
	if p, ok := s.Values["loss_projection_final"]; ok && finite(p) {
		msg += fmt.Sprintf("; the fit projects %.4g at the planned end", p)
		if se, ok := s.Values["loss_projection_se"]; ok && finite(se) {
			msg += fmt.Sprintf(" ± %.2g", se)
		}
	}
	f.ctx.fire(out, s, RuleOffTrack, "scaling_law_residual", res, res/z*cfg.OffTrackZ, msg)
}

// validateOnTrack checks the off_track rule's fields.
func (c Config) validateOnTrack() []error {
	var errs []error
	if c.OffTrackSteps < 0 {
		errs = append(errs, fmt.Errorf("monitor.off_track_steps must be >= 0 (0 = off), got %d", c.OffTrackSteps))
	}
	if !(c.OffTrackZ > 0) || math.IsInf(c.OffTrackZ, 0) {
		errs = append(errs, fmt.Errorf("monitor.off_track_z must be a finite number > 0, got %g", c.OffTrackZ))
	}
	if !(c.OffTrackMin >= 0) || math.IsInf(c.OffTrackMin, 0) {
		errs = append(errs, fmt.Errorf("monitor.off_track_min must be a finite number >= 0, got %g", c.OffTrackMin))
	}
	return errs
}
