package hfrun

import (
	"fmt"
	"path/filepath"

	"github.com/kestrel-lm/kestrel/internal/config"
	"github.com/kestrel-lm/kestrel/internal/hf"
	"github.com/kestrel-lm/kestrel/internal/train"
)

// Import reads and checks the Hugging Face directory dir (every tensor
// mapped and its shape checked, BF16/F16 converted: hf.Load) and returns
// the run config that warm-starts from it: base (a config file, "" for the
// defaults) with overrides, its [model] section replaced by the one
// config.json describes, and init.from = "hf:DIR" (absolute) with
// init.mode = "weights". Training with it prints and records the usual
// warm-start report.
func Import(dir, base string, overrides []config.Override) (config.Config, *hf.Model, error) {
	m, err := hf.Load(dir)
	if err != nil {
		return config.Config{}, nil, fmt.Errorf("import: %w", err)
	}
	cfg, err := config.Load(base, overrides)
	if err != nil {
		return config.Config{}, nil, fmt.Errorf("import: %w", err)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return config.Config{}, nil, fmt.Errorf("import: %w", err)
	}
	cfg.Model = m.Config
	cfg.Init.From, cfg.Init.Mode = train.HFPrefix+abs, "weights"
	return cfg, m, nil
}
