package show

import (
	"fmt"
	"io"
	"strings"

	"github.com/kestrel-lm/kestrel/internal/hf"
	"github.com/kestrel-lm/kestrel/internal/safetensors"
)

// ImportSummary prints what hfrun.Import read from dir and that the run
// config out (warm-starting from initFrom, its init.from) was written:
// the architecture, the tensors mapped, those converted per source dtype
// and those ignored, then how to train.
func ImportSummary(w io.Writer, dir, out, initFrom string, m *hf.Model) error {
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
	fmt.Fprintf(&b, "\nwrote %s (init.from = %q); train with: kestrel train --config %s\n", out, initFrom, out)
	_, err := io.WriteString(w, b.String())
	return err
}
