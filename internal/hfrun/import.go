package hfrun

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/kestrel-lm/kestrel/internal/config"
	"github.com/kestrel-lm/kestrel/internal/fileguard"
	"github.com/kestrel-lm/kestrel/internal/hf"
	"github.com/kestrel-lm/kestrel/internal/safetensors"
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

// configHeader is how config.WriteFile starts every config it writes: an
// existing --out that starts with it is kestrel's and may be replaced.
const configHeader = "# kestrel resolved config:"

// CheckImportOut returns nil when import may write the run config out: it
// is not a file of the Hugging Face directory dir (nor inside it) nor the
// base config, and it does not exist, or it is a config kestrel wrote, or
// overwrite is set; a symbolic link or a non-regular file never
// (fileguard.File).
func CheckImportOut(out, dir, base string, overwrite bool) error {
	inputs := []string{dir}
	if base != "" {
		inputs = append(inputs, base)
	}
	g := fileguard.File{Path: out, What: "run config", Marker: []byte(configHeader), Inputs: inputs, Overwrite: overwrite, Flag: "--overwrite"}
	if err := g.Check(); err != nil {
		return fmt.Errorf("import: --out: %w", err)
	}
	return nil
}

// WriteImportSummary prints what Import read from dir and that the run
// config out (warm-starting from cfg.Init.From) was written: the
// architecture, the tensors mapped, those converted per source dtype and
// those ignored, then how to train.
func WriteImportSummary(w io.Writer, dir, out string, cfg config.Config, m *hf.Model) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s, %d tensors mapped and shape-checked", dir, m.HF.Architectures[0], len(m.Weights.Tensors))
	for _, dt := range []safetensors.DType{safetensors.BF16, safetensors.F16, safetensors.F64} {
		if n := m.Converted[dt]; n > 0 {
			fmt.Fprintf(&b, ", %d converted from %s", n, dt)
		}
	}
	if len(m.Ignored) > 0 {
		fmt.Fprintf(&b, ", ignored %v", m.Ignored)
	}
	fmt.Fprintf(&b, "\nwrote %s (init.from = %q); train with: kestrel train --config %s\n", out, cfg.Init.From, out)
	_, err := io.WriteString(w, b.String())
	return err
}
