package train

import "github.com/kestrel-lm/kestrel/internal/checkpoint"

// CheckpointConfig is the [checkpoint] section, owned by internal/checkpoint.
type CheckpointConfig = checkpoint.Config

// DefaultCheckpointConfig returns the defaults of the [checkpoint] section.
func DefaultCheckpointConfig() CheckpointConfig { return checkpoint.DefaultConfig() }

// InitConfig is the [init] section, owned by internal/checkpoint.
type InitConfig = checkpoint.InitConfig

// DefaultInitConfig returns the defaults of the [init] section.
func DefaultInitConfig() InitConfig { return checkpoint.DefaultInitConfig() }
