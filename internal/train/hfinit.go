package train

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/kestrel-lm/kestrel/internal/checkpoint"
	"github.com/kestrel-lm/kestrel/internal/rundir"

	"github.com/kestrel-lm/kestrel/internal/hf"
)

// HFPrefix marks an init.from that names a Hugging Face Llama/Qwen3
// directory rather than a kestrel checkpoint: init.from = "hf:DIR".
const HFPrefix = "hf:"

// loadHF reads the Hugging Face directory of an "hf:DIR" init.from as a
// checkpoint of step 0 with weights only (no optimizer state, no EMA): a
// warm-start from it takes init.mode = "weights".
func loadHF(path string) (*checkpoint.Loaded, error) {
	dir := strings.TrimPrefix(path, HFPrefix)
	m, err := hf.Load(dir)
	if err != nil {
		return nil, err
	}
	l := &checkpoint.Loaded{Dir: HFPrefix + dir, Model: m.Weights}
	l.State.Model = m.Config
	return l, nil
}

// checkHFMode refuses a warm-start mode that needs more than weights from
// a Hugging Face directory.
func checkHFMode(l *checkpoint.Loaded, mode string) error {
	if l.Optim == nil && mode != "weights" {
		return fmt.Errorf("%s holds weights only (a Hugging Face directory): set init.mode = \"weights\", not %q", l.Dir, mode)
	}
	return nil
}

// resolveCheckpoint turns init.from into a verified checkpoint: a
// checkpoint directory, a checkpoints/ directory, or a run directory; or
// "hf:DIR", a Hugging Face Llama/Qwen3 directory (weights only).
func resolveCheckpoint(path string, log *slog.Logger) (*checkpoint.Loaded, error) {
	if strings.HasPrefix(path, HFPrefix) {
		return loadHF(path) // hfinit.go
	}
	if _, err := os.Stat(filepath.Join(path, checkpoint.SumsFile)); err == nil {
		return checkpoint.Load(path)
	}
	for _, root := range []string{rundir.Of(path).Checkpoints(), path} {
		if list, _ := checkpoint.ListDir(root); len(list) > 0 {
			return checkpoint.Latest(root, log)
		}
	}
	return nil, fmt.Errorf("%s: no checkpoint there (want a step-NNNNNNNN directory or a run directory)", path)
}
