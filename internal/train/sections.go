package train

import (
	"errors"
	"fmt"
	"math"

	"github.com/kestrel-lm/kestrel/internal/rewind"
)

// CheckpointConfig is the [checkpoint] section of a run config.
type CheckpointConfig struct {
	Every          int     `toml:"every" comment:"write a rolling checkpoint every N steps (0 = only at the end and on Ctrl-C)"`
	EveryMinutes   float64 `toml:"every_minutes" comment:"also write a rolling checkpoint when this many minutes passed since the last one (0 = off)"`
	Keep           int     `toml:"keep" comment:"rolling checkpoints to keep (older ones are deleted only after a newer one is committed)"`
	PermanentEvery int     `toml:"permanent_every" comment:"write a permanent checkpoint (never deleted) every K steps (0 = off); the final checkpoint is always permanent"`
	// ConfirmProbeRise bounds a checkpoint's own probe loss against the one
	// before it (confirm.go).
	ConfirmProbeRise float64 `toml:"confirm_probe_rise" comment:"a checkpoint is confirmed (can become last-good) only when its own fixed_probe_loss is at most this many nats above the previous checkpoint's, and the steps after it up to the next checkpoint raised no SEV0/SEV1 model incident"`
}

// DefaultCheckpointConfig returns the defaults of the [checkpoint] section.
func DefaultCheckpointConfig() CheckpointConfig {
	return CheckpointConfig{Every: 500, Keep: 2, ConfirmProbeRise: 0.3}
}

// Validate reports inconsistent fields.
func (c CheckpointConfig) Validate() error {
	if c.Every < 0 || !(c.EveryMinutes >= 0) || math.IsInf(c.EveryMinutes, 0) || c.PermanentEvery < 0 {
		return errors.New("checkpoint.every, checkpoint.every_minutes and checkpoint.permanent_every must be >= 0 (and finite)")
	}
	if !(c.ConfirmProbeRise >= 0) || math.IsInf(c.ConfirmProbeRise, 0) {
		return fmt.Errorf("checkpoint.confirm_probe_rise must be a finite number >= 0, got %g", c.ConfirmProbeRise)
	}
	if c.Keep < 1 {
		return fmt.Errorf("checkpoint.keep must be >= 1, got %d", c.Keep)
	}
	return nil
}

// InitConfig is the [init] section: warm-starting from another checkpoint.
type InitConfig struct {
	From string `toml:"from" comment:"warm-start from this checkpoint directory, or the newest valid checkpoint of this run directory, or hf:DIR, a Hugging Face Llama/Qwen3 directory (weights only: init.mode = weights; see docs/export.md) (empty = fresh initialisation)"`
	Mode string `toml:"mode" comment:"what to take from init.from: weights | weights+optimizer (also Adam moments and clip/skip windows) | full (also step, tokens, data position, EMA, schedule)"`
	// Necromancy is a generation number rather than a bool so that it
	// fires once per request: see necromancy.go.
	Necromancy int `toml:"necromancy" comment:"necromancy (Marin 32B's rescue): when this invocation starts from a checkpoint (a resume, a rewind, or a warm-start from init.from) whose state.json records a lower necromancy generation than this, reset the Adam moments and the bias-correction step count, and seed the update-clip and skip-step windows from the checkpoint's windows so clipping and skipping are active from the first step; checkpoints written afterwards record the generation, so resuming them does not reset again; raise it (1, 2, …) for each new reset (0 = never)"`
}

// DefaultInitConfig returns the defaults of the [init] section.
func DefaultInitConfig() InitConfig { return InitConfig{Mode: "weights"} }

// Validate reports inconsistent fields.
func (c InitConfig) Validate() error {
	if c.Necromancy < 0 {
		return fmt.Errorf("init.necromancy must be >= 0 (0 = never), got %d", c.Necromancy)
	}
	switch c.Mode {
	case "weights", "weights+optimizer", "full":
		return nil
	}
	return fmt.Errorf("init.mode: unknown mode %q (want weights, weights+optimizer or full)", c.Mode)
}

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
	if c.RecurSteps < 0 || c.RecurSteps > rewind.MaxSkipStep {
		return fmt.Errorf("rescue.recur_steps must be in [0, %d], got %d", rewind.MaxSkipStep, c.RecurSteps)
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
	if c.SkipWindow > rewind.MaxSkipStep {
		return fmt.Errorf("rescue.skip_window must be <= %d (rewind.MaxSkipStep), got %d", rewind.MaxSkipStep, c.SkipWindow)
	}
	if !(c.LRScale > 0) || math.IsInf(c.LRScale, 0) {
		return fmt.Errorf("rescue.lr_scale must be a finite number > 0 (1 = unchanged), got %v", c.LRScale)
	}
	return nil
}
