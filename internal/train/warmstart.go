package train

import (
	"fmt"
	"slices"

	"github.com/kestrel-lm/kestrel/internal/checkpoint"
	"github.com/kestrel-lm/kestrel/internal/model"
	"github.com/kestrel-lm/kestrel/internal/safetensors"
)

// copyMatching copies every tensor of ts found in src (under name+suffix)
// with the same shape into dst. It reports the copied, absent and
// shape-mismatched names, and the source tensors left unused.
func copyMatching(src *safetensors.File, suffix string, ts []model.Tensor, dst []float32) (copied, missing, mismatched, unused []string, err error) {
	seen := map[string]bool{}
	for _, t := range ts {
		st, ok := src.Get(t.Name + suffix)
		if !ok {
			missing = append(missing, t.Name)
			continue
		}
		seen[t.Name+suffix] = true
		if !slices.Equal(st.Shape, t.Shape) {
			mismatched = append(mismatched, fmt.Sprintf("%s: checkpoint %v, model %v", t.Name, st.Shape, t.Shape))
			continue
		}
		v, err := st.Float32()
		if err != nil {
			return nil, nil, nil, nil, err
		}
		copy(dst[t.Offset:t.Offset+t.Size], v)
		copied = append(copied, t.Name)
	}
	for _, n := range src.Names() {
		if !seen[n] {
			unused = append(unused, n)
		}
	}
	return copied, missing, mismatched, unused, nil
}

// restoreExact loads a checkpoint of the same architecture for a resume:
// every tensor must be present with its shape.
func restoreExact(l *checkpoint.Loaded, ts []model.Tensor, params, m, v, ema []float32) error {
	type part struct {
		f      *safetensors.File
		file   string
		suffix string
		dst    []float32
	}
	parts := []part{{l.Model, checkpoint.ModelFile, "", params}, {l.Optim, checkpoint.OptimizerFile, ".exp_avg", m}, {l.Optim, checkpoint.OptimizerFile, ".exp_avg_sq", v}}
	if ema != nil {
		parts = append(parts, part{l.EMA, checkpoint.EMAFile, "", ema})
	}
	for _, p := range parts {
		_, missing, mismatched, _, err := copyMatching(p.f, p.suffix, ts, p.dst)
		if err != nil {
			return fmt.Errorf("%s/%s: %w", l.Dir, p.file, err)
		}
		if len(missing)+len(mismatched) > 0 {
			return fmt.Errorf("%s/%s does not match the model (missing %v, mismatched %v); the config's model section changed since the checkpoint — use init.from to warm-start a different architecture",
				l.Dir, p.file, missing, mismatched)
		}
	}
	return nil
}
