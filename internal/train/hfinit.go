package train

import (
	"fmt"

	"github.com/kestrel-lm/kestrel/internal/checkpoint"
)

// HFPrefix marks an init.from that names a Hugging Face Llama/Qwen3
// directory rather than a kestrel checkpoint: init.from = "hf:DIR"
// (checkpoint.Open reads it, weights only).
const HFPrefix = checkpoint.HFPrefix

// checkHFMode refuses a warm-start mode that needs more than weights from
// a Hugging Face directory.
func checkHFMode(l *checkpoint.Loaded, mode string) error {
	if l.Optim == nil && mode != "weights" {
		return fmt.Errorf("%s holds weights only (a Hugging Face directory): set init.mode = \"weights\", not %q", l.Dir, mode)
	}
	return nil
}
