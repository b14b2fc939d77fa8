package rewind

import (
	"fmt"
	"math"
)

// RescueConfig is the [rescue] section: the automatic rescue ladder
// (internal/run carries it out; see docs/rescue.md).
type RescueConfig struct {
	AutoRollback bool     `toml:"auto_rollback" comment:"the rescue ladder: on an incident named in rescue.on, roll back to the last confirmed-good checkpoint before it, skip the data window from its first precursor and continue in the same process (rung 1); if it recurs within recur_steps, do it again with the LR scaled for the rest of the run and tighter update clipping (rung 2); if it recurs again, or max_rollbacks were taken, stop with the incident bundle and a rescue summary (rung 3). Needs monitor.enabled and monitor.pause_on_sev0; off by default"`
	On           []string `toml:"on" comment:"the incidents the ladder acts on: divergence (SEV0), nan_inf (SEV0), data_event (SEV1 batch_anomaly, or a loss spike whose verdict is a data event)"`
	MaxRollbacks int      `toml:"max_rollbacks" comment:"automatic rollbacks allowed in the run (counted in interventions.jsonl, across restarts); one more incident after that stops the run with its error"`
	SkipWindow   int      `toml:"skip_window" comment:"data steps skipped after the incident: the window runs from its first precursor alert to incident step + skip_window - 1"`
	LRScale      float64  `toml:"lr_scale" comment:"rung 1: multiply the learning rate by this after the rollback (1 = unchanged)"`
	LRSteps      int      `toml:"lr_steps" comment:"rung 1: how many steps after the rollback checkpoint lr_scale holds (0 = until the next rewind)"`
	RecurSteps   int      `toml:"recur_steps" comment:"an incident within this many steps after the previous automatic rollback's skip window is a recurrence: the ladder climbs a rung"`
	Rung2LRScale float64  `toml:"rung2_lr_scale" comment:"rung 2: multiply the learning rate by this from the rollback to the end of the run"`
	Rung2Sigma   float64  `toml:"rung2_update_clip_sigma" comment:"rung 2: turn update clipping on with this optim.update_clip_sigma, active after 8 update norms (optim.update_clip_min_steps = 8)"`
}

// Rescue triggers (RescueConfig.On).
const (
	RescueOnDivergence = "divergence"
	RescueOnNaN        = "nan_inf"
	RescueOnDataEvent  = "data_event"
)

// DefaultRescueConfig returns the defaults of the [rescue] section.
func DefaultRescueConfig() RescueConfig {
	return RescueConfig{On: []string{RescueOnDivergence, RescueOnNaN}, MaxRollbacks: 3, SkipWindow: 10, LRScale: 1, LRSteps: 20,
		RecurSteps: 100, Rung2LRScale: 0.5, Rung2Sigma: 1.5}
}

// Validate reports inconsistent fields.
func (c RescueConfig) Validate() error {
	for i, on := range c.On {
		switch on {
		case RescueOnDivergence, RescueOnNaN, RescueOnDataEvent:
		default:
			return fmt.Errorf("rescue.on[%d] = %q: want %q, %q or %q", i, on, RescueOnDivergence, RescueOnNaN, RescueOnDataEvent)
		}
	}
	if c.RecurSteps < 0 || c.RecurSteps > MaxSkipStep {
		return fmt.Errorf("rescue.recur_steps must be in [0, %d], got %d", MaxSkipStep, c.RecurSteps)
	}
	if !(c.Rung2LRScale > 0 && c.Rung2LRScale <= 1) {
		return fmt.Errorf("rescue.rung2_lr_scale must be in (0, 1], got %v", c.Rung2LRScale)
	}
	if !(c.Rung2Sigma > 0) || math.IsInf(c.Rung2Sigma, 0) {
		return fmt.Errorf("rescue.rung2_update_clip_sigma must be a finite number > 0, got %v", c.Rung2Sigma)
	}
	if c.MaxRollbacks < 0 || c.SkipWindow < 0 || c.LRSteps < 0 {
		return fmt.Errorf("rescue.max_rollbacks, rescue.skip_window and rescue.lr_steps must be >= 0, got %d, %d, %d", c.MaxRollbacks, c.SkipWindow, c.LRSteps)
	}
	if c.SkipWindow > MaxSkipStep {
		return fmt.Errorf("rescue.skip_window must be <= %d (MaxSkipStep), got %d", MaxSkipStep, c.SkipWindow)
	}
	if !(c.LRScale > 0) || math.IsInf(c.LRScale, 0) {
		return fmt.Errorf("rescue.lr_scale must be a finite number > 0 (1 = unchanged), got %v", c.LRScale)
	}
	return nil
}
