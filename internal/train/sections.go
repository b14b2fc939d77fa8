package train

import (
	"errors"
	"fmt"
	"math"
)

// CheckpointConfig is the [checkpoint] section of a run config.
type CheckpointConfig struct {
	Every          int     `toml:"every" comment:"write a rolling checkpoint every N steps (0 = only at the end and on Ctrl-C)"`
	EveryMinutes   float64 `toml:"every_minutes" comment:"also write a rolling checkpoint when this many minutes passed since the last one (0 = off)"`
	Keep           int     `toml:"keep" comment:"rolling checkpoints to keep (older ones are deleted only after a newer one is committed)"`
	PermanentEvery int     `toml:"permanent_every" comment:"write a permanent checkpoint (never deleted) every K steps (0 = off); the final checkpoint is always permanent"`
}

// DefaultCheckpointConfig returns the defaults of the [checkpoint] section.
func DefaultCheckpointConfig() CheckpointConfig { return CheckpointConfig{Every: 500, Keep: 2} }

// Validate reports inconsistent fields.
func (c CheckpointConfig) Validate() error {
	if c.Every < 0 || !(c.EveryMinutes >= 0) || math.IsInf(c.EveryMinutes, 0) || c.PermanentEvery < 0 {
		return errors.New("checkpoint.every, checkpoint.every_minutes and checkpoint.permanent_every must be >= 0 (and finite)")
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

// DebugConfig is the [debug] section: fault-injection knobs for testing the
// stability toolkit and the monitor. All are off by default. Steps are
// 1-based (the step number written to metrics.jsonl).
type DebugConfig struct {
	NaNAtStep          int     `toml:"nan_at_step" comment:"inject a NaN into the loss and gradients at this step (0 = never); the run must stop without checkpointing"`
	LRSpikeAtStep      int     `toml:"lr_spike_at_step" comment:"multiply the learning rate by lr_spike_factor from this step on (0 = never)"`
	LRSpikeFactor      float64 `toml:"lr_spike_factor" comment:"learning-rate multiplier of the injected spike"`
	LRSpikeSteps       int     `toml:"lr_spike_steps" comment:"how many steps the LR spike lasts"`
	CorruptBatchAtStep int     `toml:"corrupt_batch_at_step" comment:"replace this step's batch with uniformly random tokens (0 = never)"`

	// Data parallelism (docs/distributed.md).
	HangAtStep int `toml:"hang_at_step" comment:"data-parallel runs: rank hang_rank stops before this step's collectives and waits until the run is killed, to test the rank_hang SEV0 (0 = never)"`
	HangRank   int `toml:"hang_rank" comment:"the rank that hangs at hang_at_step"`
}

// DefaultDebugConfig returns the defaults of the [debug] section.
func DefaultDebugConfig() DebugConfig { return DebugConfig{LRSpikeFactor: 10, LRSpikeSteps: 3} }

// RescueConfig is the [rescue] section: automatic rollback on a SEV0
// divergence (internal/run carries it out; see docs/rescue.md).
type RescueConfig struct {
	AutoRollback bool    `toml:"auto_rollback" comment:"on a SEV0 divergence that paused the run, roll back to the last-good checkpoint, skip the data window of the spike and continue in the same process (needs monitor.enabled and monitor.pause_on_sev0); off by default"`
	MaxRollbacks int     `toml:"max_rollbacks" comment:"automatic rollbacks allowed in the run (counted in interventions.jsonl, across restarts); one more divergence after that stops the run with its error"`
	SkipWindow   int     `toml:"skip_window" comment:"data steps skipped after the spike: the window runs from the spike's first precursor alert to spike step + skip_window - 1"`
	LRScale      float64 `toml:"lr_scale" comment:"multiply the learning rate by this after a rollback (1 = unchanged)"`
	LRSteps      int     `toml:"lr_steps" comment:"how many steps after the rollback checkpoint lr_scale holds (0 = until the next rewind)"`
}

// DefaultRescueConfig returns the defaults of the [rescue] section.
func DefaultRescueConfig() RescueConfig {
	return RescueConfig{MaxRollbacks: 2, SkipWindow: 10, LRScale: 0.5, LRSteps: 20}
}

// Validate reports inconsistent fields.
func (c RescueConfig) Validate() error {
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
