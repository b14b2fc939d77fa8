package train

// CheckpointConfig is the [checkpoint] section of a run config.
type CheckpointConfig struct {
	Every int `toml:"every" comment:"write a rolling checkpoint every N steps (0 = only at the end and on Ctrl-C)"`
	Keep  int `toml:"keep" comment:"rolling checkpoints to keep"`
}

// DefaultCheckpointConfig returns the defaults of the [checkpoint] section.
func DefaultCheckpointConfig() CheckpointConfig { return CheckpointConfig{Every: 500, Keep: 2} }

// InitConfig is the [init] section: warm-starting from another checkpoint.
type InitConfig struct {
	From string `toml:"from" comment:"warm-start from this checkpoint directory (empty = fresh initialisation)"`
	Mode string `toml:"mode" comment:"what to take from init.from: weights | weights+optimizer | full"`
}

// DefaultInitConfig returns the defaults of the [init] section.
func DefaultInitConfig() InitConfig { return InitConfig{Mode: "weights"} }

// DebugConfig is the [debug] section: fault-injection knobs for testing the
// stability toolkit and the monitor. All are off by default.
type DebugConfig struct {
	NaNAtStep int `toml:"nan_at_step" comment:"inject a NaN into the loss at this step (0 = never)"`
}

// DefaultDebugConfig returns the defaults of the [debug] section.
func DefaultDebugConfig() DebugConfig { return DebugConfig{} }
