package config

import "github.com/kestrel-lm/kestrel/internal/model"

// WarmStartFrom returns the run config that warm-starts from an imported
// Hugging Face directory (hfrun.ImportSource): base (a config file, ""
// for the defaults) with overrides, its [model] section replaced by arch
// (the one config.json describes), init.from = from and init.mode =
// "weights".
func WarmStartFrom(base string, overrides []Override, arch model.Config, from string) (Config, error) {
	cfg, err := Load(base, overrides)
	if err != nil {
		return Config{}, err
	}
	cfg.Model = arch
	cfg.Init.From, cfg.Init.Mode = from, "weights"
	return cfg, nil
}
