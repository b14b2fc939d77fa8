package checkpoint

import (
	"errors"
	"fmt"
	"math"
)

// Config is the [checkpoint] section of a run config: how often the
// trainer writes checkpoints, how many it keeps, how it confirms and
// verifies them.
type Config struct {
	Every          int     `toml:"every" comment:"write a rolling checkpoint every N steps (0 = only at the end and on Ctrl-C)"`
	EveryMinutes   float64 `toml:"every_minutes" comment:"also write a rolling checkpoint when this many minutes passed since the last one (0 = off)"`
	Keep           int     `toml:"keep" comment:"rolling checkpoints to keep (older ones are deleted only after a newer one is committed)"`
	PermanentEvery int     `toml:"permanent_every" comment:"write a permanent checkpoint (never deleted) every K steps (0 = off); the final checkpoint is always permanent"`
	// ConfirmProbeRise bounds a checkpoint's own probe loss against the one
	// before it (internal/train/confirm.go).
	ConfirmProbeRise float64 `toml:"confirm_probe_rise" comment:"a checkpoint is confirmed (can become last-good) only when its own fixed_probe_loss is at most this many nats above the previous checkpoint's, and the steps after it up to the next checkpoint raised no SEV0/SEV1 model incident"`
	// VerifyRestoreEvery paces the restore test of the verification after
	// the write (internal/train/ckverify.go).
	VerifyRestoreEvery int `toml:"verify_restore_every" comment:"after every checkpoint is installed its files are re-read against SHA256SUMS; every Nth checkpoint of an invocation (and the final one) also gets the restore test: optimizer.safetensors read back and compared bit for bit with the Adam moments in memory, which must be finite; a failure is the SEV0 checkpoint_failed and the checkpoint never becomes last-good nor is resumed from (0 = checksums only)"`
}

// DefaultConfig returns the defaults of the [checkpoint] section.
func DefaultConfig() Config {
	return Config{Every: 500, Keep: 2, ConfirmProbeRise: 0.3, VerifyRestoreEvery: 1}
}

// Validate reports inconsistent fields.
func (c Config) Validate() error {
	if c.Every < 0 || !(c.EveryMinutes >= 0) || math.IsInf(c.EveryMinutes, 0) || c.PermanentEvery < 0 {
		return errors.New("checkpoint.every, checkpoint.every_minutes and checkpoint.permanent_every must be >= 0 (and finite)")
	}
	if !(c.ConfirmProbeRise >= 0) || math.IsInf(c.ConfirmProbeRise, 0) {
		return fmt.Errorf("checkpoint.confirm_probe_rise must be a finite number >= 0, got %g", c.ConfirmProbeRise)
	}
	if c.Keep < 1 {
		return fmt.Errorf("checkpoint.keep must be >= 1, got %d", c.Keep)
	}
	if c.VerifyRestoreEvery < 0 {
		return fmt.Errorf("checkpoint.verify_restore_every must be >= 0, got %d", c.VerifyRestoreEvery)
	}
	return nil
}

// InitConfig is the [init] section: warm-starting from another checkpoint.
type InitConfig struct {
	From string `toml:"from" comment:"warm-start from this checkpoint directory, or the newest valid checkpoint of this run directory, or hf:DIR, a Hugging Face Llama/Qwen3 directory (weights only: init.mode = weights; see docs/export.md) (empty = fresh initialisation)"`
	Mode string `toml:"mode" comment:"what to take from init.from: weights | weights+optimizer (also Adam moments and clip/skip windows) | full (also step, tokens, data position, EMA, schedule)"`
	// Necromancy is a generation number rather than a bool so that it
	// fires once per request: see internal/train/necromancy.go.
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
