// Package modelbench measures the model's inference paths against their
// references in the same process, in alternating pairs so that load on a
// shared machine hits both sides alike: the forward-only evaluation path
// (model.LogProbs) against a training step and against Forward, and
// sampling with the KV cache (model.Decoder) against a full forward pass
// per token (model.Logits). kestrel bench eval and kestrel bench sample
// print its results.
//
// It sits above internal/run (the demo presets come from run.DemoConfig).
package modelbench

import (
	"fmt"
	"sort"

	"github.com/kestrel-lm/kestrel/internal/config"
	"github.com/kestrel-lm/kestrel/internal/model"
	"github.com/kestrel-lm/kestrel/internal/run"
	"github.com/kestrel-lm/kestrel/internal/stepbench"
)

// Presets lists the model presets ModelConfig knows.
var Presets = []string{"ref7m", "demo", "demo-quick"}

// ModelConfig returns the [model] section of a preset ("ref7m": the step
// benchmark's model; "demo", "demo-quick": kestrel demo's) or, when path is
// not empty, of that run config file (defaults + file + overrides).
func ModelConfig(preset, path string, overrides []config.Override) (model.Config, error) {
	if path != "" {
		cfg, err := config.Load(path, overrides)
		if err != nil {
			return model.Config{}, fmt.Errorf("config: %w", err)
		}
		return cfg.Model, nil
	}
	switch preset {
	case "ref7m":
		return stepbench.Ref7mConfig(), nil
	case "demo", "demo-quick":
		cfg, err := run.DemoConfig(preset == "demo-quick", "", overrides)
		if err != nil {
			return model.Config{}, err
		}
		return cfg.Model, nil
	}
	return model.Config{}, fmt.Errorf("unknown preset %q (want one of %v, or --config FILE)", preset, Presets)
}

// median returns the median of xs (sorted in place).
func median(xs []float64) float64 {
	sort.Float64s(xs)
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}
