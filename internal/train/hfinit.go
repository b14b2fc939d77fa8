package train

import (
	"fmt"
	"strings"

	"github.com/kestrel-lm/kestrel/internal/hf"
)

// HFPrefix marks an init.from that names a Hugging Face Llama/Qwen3
// directory rather than a kestrel checkpoint: init.from = "hf:DIR".
const HFPrefix = "hf:"

// loadHF reads the Hugging Face directory of an "hf:DIR" init.from as a
// checkpoint of step 0 with weights only (no optimizer state, no EMA): a
// warm-start from it takes init.mode = "weights".
func loadHF(path string) (*Loaded, error) {
	dir := strings.TrimPrefix(path, HFPrefix)
	m, err := hf.Load(dir)
	if err != nil {
		return nil, err
	}
	l := &Loaded{Dir: HFPrefix + dir, Model: m.Weights}
	l.State.Model = m.Config
	return l, nil
}

// checkHFMode refuses a warm-start mode that needs more than weights from
// a Hugging Face directory.
func checkHFMode(l *Loaded, mode string) error {
	if l.Optim == nil && mode != "weights" {
		return fmt.Errorf("%s holds weights only (a Hugging Face directory): set init.mode = \"weights\", not %q", l.Dir, mode)
	}
	return nil
}
