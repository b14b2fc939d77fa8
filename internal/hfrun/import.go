package hfrun

import (
	"fmt"
	"path/filepath"

	"github.com/kestrel-lm/kestrel/internal/checkpoint"
	"github.com/kestrel-lm/kestrel/internal/fileguard"
	"github.com/kestrel-lm/kestrel/internal/hf"
)

// ImportSource reads and checks the Hugging Face directory dir (every
// tensor mapped and its shape checked, BF16/F16 converted: hf.Load) and
// returns it with the init.from that warm-starts from it: "hf:" and its
// absolute path (checkpoint.HFPrefix). config.WarmStartFrom makes the run
// config; training with it prints and records the usual warm-start report.
func ImportSource(dir string) (*hf.Model, string, error) {
	m, err := hf.Load(dir)
	if err != nil {
		return nil, "", fmt.Errorf("import: %w", err)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, "", fmt.Errorf("import: %w", err)
	}
	return m, checkpoint.HFPrefix + abs, nil
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
