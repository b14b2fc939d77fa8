// Package optim holds AdamW with parameter groups, learning-rate schedules,
// gradient and update-norm clipping, skip-step detection and weight EMA.
package optim

// Config is the [optim] section of a run config.
type Config struct {
	LR          float64 `toml:"lr" comment:"peak learning rate"`
	MinLR       float64 `toml:"min_lr" comment:"learning rate at the end of the decay"`
	Beta1       float64 `toml:"beta1" comment:"AdamW β1"`
	Beta2       float64 `toml:"beta2" comment:"AdamW β2"`
	Eps         float64 `toml:"eps" comment:"AdamW ε"`
	WeightDecay float64 `toml:"weight_decay" comment:"decoupled weight decay (applied to matrices only by default)"`
	Schedule    string  `toml:"schedule" comment:"learning-rate schedule: cosine | wsd | wsd-s | multistep | constant"`
	Warmup      int     `toml:"warmup_steps" comment:"linear warmup steps"`
	MaxGradNorm float64 `toml:"max_grad_norm" comment:"clip the global gradient norm to this value (0 = off)"`
}

// DefaultConfig returns the defaults of the [optim] section.
func DefaultConfig() Config {
	return Config{
		LR:          1e-3,
		MinLR:       1e-4,
		Beta1:       0.9,
		Beta2:       0.99,
		Eps:         1e-8,
		WeightDecay: 0.1,
		Schedule:    "cosine",
		Warmup:      100,
		MaxGradNorm: 1.0,
	}
}
