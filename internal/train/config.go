// Package train is the training loop: batches, forward/backward with
// gradient accumulation, the optimizer step with the stability toolkit,
// checkpoints with bit-exact resume, and warm-start surgery.
package train

// Config is the [train] section of a run config.
type Config struct {
	Steps       int `toml:"steps" comment:"number of optimizer steps"`
	BatchSize   int `toml:"batch_size" comment:"global batch in sequences per step"`
	MicroBatch  int `toml:"micro_batch" comment:"sequences per forward/backward (gradient accumulation when smaller than batch_size; 0 = batch_size)"`
	EvalEvery   int `toml:"eval_every" comment:"evaluate validation loss every N steps (0 = only at the end)"`
	EvalBatches int `toml:"eval_batches" comment:"batches per validation evaluation"`
}

// DefaultConfig returns the defaults of the [train] section.
func DefaultConfig() Config {
	return Config{Steps: 2000, BatchSize: 12, EvalEvery: 250, EvalBatches: 20}
}
