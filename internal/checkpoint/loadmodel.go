package checkpoint

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/kestrel-lm/kestrel/internal/datadir"
	"github.com/kestrel-lm/kestrel/internal/hf"
	"github.com/kestrel-lm/kestrel/internal/model"
	"github.com/kestrel-lm/kestrel/internal/rundir"
	"github.com/kestrel-lm/kestrel/internal/safetensors"
)

// HFPrefix marks a path that names a Hugging Face Llama/Qwen3 directory
// rather than a kestrel checkpoint: init.from = "hf:DIR".
const HFPrefix = "hf:"

// Open turns path into a verified checkpoint: a checkpoint directory, a
// checkpoints/ directory, or a run directory (its newest checkpoint that
// verifies); or "hf:DIR", a Hugging Face Llama/Qwen3 directory read as a
// checkpoint of step 0 with weights only (no optimizer state, no EMA).
func Open(path string, log *slog.Logger) (*Loaded, error) {
	if dir, ok := strings.CutPrefix(path, HFPrefix); ok {
		m, err := hf.Load(dir)
		if err != nil {
			return nil, err
		}
		l := &Loaded{Dir: HFPrefix + dir, Model: m.Weights}
		l.State.Model = m.Config
		return l, nil
	}
	if _, err := os.Stat(filepath.Join(path, SumsFile)); err == nil {
		return Load(path)
	}
	for _, root := range []string{rundir.Of(path).Checkpoints(), path} {
		if list, _ := ListDir(root); len(list) > 0 {
			return Latest(root, log)
		}
	}
	return nil, fmt.Errorf("%s: no checkpoint there (want a step-NNNNNNNN directory or a run directory)", path)
}

// LoadModel builds the model of the checkpoint Open finds at path and
// loads its weights, or its EMA weights when ema is set; every tensor of
// the model must be there with its shape.
func LoadModel(path string, ema bool, log *slog.Logger) (*model.Model, *Loaded, error) {
	l, err := Open(path, log)
	if err != nil {
		return nil, nil, err
	}
	m, err := model.New(l.State.Model, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("%s/%s: %w", l.Dir, StateFile, err)
	}
	src, file := l.Model, ModelFile
	if ema {
		src, file = l.EMA, EMAFile
	}
	if src == nil {
		return nil, nil, fmt.Errorf("%s has no %s (a Hugging Face directory holds one set of weights)", l.Dir, file)
	}
	if err := loadWeights(src, m, l.Dir+"/"+file); err != nil {
		return nil, nil, err
	}
	return m, l, nil
}

// loadWeights copies every tensor of m from src (named where); a tensor
// missing or of another shape is an error listing them all.
func loadWeights(src *safetensors.File, m *model.Model, where string) error {
	var missing, mismatched []string
	for _, t := range m.Tensors() {
		st, ok := src.Get(t.Name)
		switch {
		case !ok:
			missing = append(missing, t.Name)
			continue
		case !slices.Equal(st.Shape, t.Shape):
			mismatched = append(mismatched, fmt.Sprintf("%s: checkpoint %v, model %v", t.Name, st.Shape, t.Shape))
			continue
		}
		v, err := st.Float32()
		if err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
		copy(m.Params[t.Offset:t.Offset+t.Size], v)
	}
	if len(missing)+len(mismatched) > 0 {
		return fmt.Errorf("%s does not match the model in %s (missing %v, mismatched %v)", where, StateFile, missing, mismatched)
	}
	return nil
}

// DatasetDir is the directory of the prepared dataset the state names
// (its Tokenizer: data.path as the run's config gave it, ${KESTREL_DATA}
// kept so a run moves between machines), resolved: the one place a
// checkpoint's dataset path is resolved, for every reader of a finished
// run (openrun, eval, generate, hfrun). The error names the field.
func (s State) DatasetDir() (string, error) {
	dir, err := datadir.Expand(s.Tokenizer)
	if err != nil {
		return "", fmt.Errorf("%s tokenizer (the dataset) %q: %w", StateFile, s.Tokenizer, err)
	}
	return dir, nil
}

// ByteLevel says whether the state describes a byte-level run: tokenizer
// "bytes", or none recorded with a 256-token model (checkpoints written
// before state.json named the tokenizer).
func (s State) ByteLevel() bool {
	return s.Tokenizer == "bytes" || (s.Tokenizer == "" && s.Model.Vocab == 256)
}
