package hf

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/kestrel-lm/kestrel/internal/fileguard"
	"github.com/kestrel-lm/kestrel/internal/model"
	"github.com/kestrel-lm/kestrel/internal/safetensors"
)

// Model is a Hugging Face model directory read into memory: its config,
// the kestrel model config it maps to, and every expected weight as an F32
// tensor under kestrel's (= Hugging Face's) name.
type Model struct {
	Dir     string
	HF      Config
	Config  model.Config
	Weights *safetensors.File
	// Converted counts the tensors stored as BF16, F16 or F64 that were
	// converted to float32; Ignored names tensors read but not needed
	// (rotary inv_freq buffers, a tied lm_head).
	Converted map[safetensors.DType]int
	Ignored   []string
}

// index is model.safetensors.index.json.
type index struct {
	WeightMap map[string]string `json:"weight_map"`
}

// Load reads a Llama/Qwen3 directory: config.json, then model.safetensors
// or the shards model.safetensors.index.json names. Every tensor the
// config implies must be present with its shape (an error names the
// tensor, its shape and the expected one); BF16, F16 and F64 are converted
// to float32; a tensor that is neither expected nor known to be harmless
// is an error, so a model with parts kestrel cannot run is never half
// loaded.
func Load(dir string) (*Model, error) {
	h, c, err := ReadConfig(dir)
	if err != nil {
		return nil, err
	}
	raw, err := readWeights(dir)
	if err != nil {
		return nil, err
	}
	m := &Model{Dir: dir, HF: h, Config: c, Converted: map[safetensors.DType]int{}}
	var out []safetensors.Tensor
	var errs []error
	for _, want := range ExpectedTensors(c) {
		t, ok := raw[want.Name]
		if !ok {
			errs = append(errs, fmt.Errorf("tensor %s %v: missing", want.Name, want.Shape))
			continue
		}
		delete(raw, want.Name)
		if !slices.Equal(t.Shape, want.Shape) {
			errs = append(errs, fmt.Errorf("tensor %s: shape %v in %s, config.json implies %v", want.Name, t.Shape, t.file, want.Shape))
			continue
		}
		v, err := t.Float32()
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", t.file, err))
			continue
		}
		if t.DType != safetensors.F32 {
			m.Converted[t.DType]++
		}
		out = append(out, safetensors.FromFloat32(want.Name, want.Shape, v))
	}
	var unknown []string
	for name := range raw {
		if strings.HasSuffix(name, ".rotary_emb.inv_freq") || (c.Tied && name == "lm_head.weight") {
			m.Ignored = append(m.Ignored, name)
			continue
		}
		unknown = append(unknown, name)
	}
	sort.Strings(m.Ignored)
	sort.Strings(unknown)
	if len(unknown) > 0 {
		errs = append(errs, fmt.Errorf("tensors kestrel's Llama/Qwen3 layout has no place for: %s", strings.Join(unknown, ", ")))
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("hf: %s: %w", dir, errors.Join(errs...))
	}
	if m.Weights, err = safetensors.NewFile(out, nil); err != nil {
		return nil, fmt.Errorf("hf: %s: %w", dir, err)
	}
	return m, nil
}

// located is a tensor with the file it came from.
type located struct {
	safetensors.Tensor
	file string
}

// readWeights reads every tensor of dir's single or sharded safetensors.
func readWeights(dir string) (map[string]located, error) {
	out := map[string]located{}
	ip := filepath.Join(dir, IndexFile)
	b, err := fileguard.ReadFile(ip, MaxJSONBytes) // a regular file, bounded
	if errors.Is(err, os.ErrNotExist) {
		path := filepath.Join(dir, WeightsFile)
		f, err := safetensors.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("hf: %s (and no %s): %w", dir, IndexFile, err)
		}
		for _, t := range f.Tensors {
			out[t.Name] = located{t, path}
		}
		return out, nil
	}
	if err != nil {
		return nil, fmt.Errorf("hf: %w", err)
	}
	var idx index
	if err := json.Unmarshal(b, &idx); err != nil {
		return nil, fmt.Errorf("hf: %s: %w", ip, err)
	}
	if len(idx.WeightMap) == 0 {
		return nil, fmt.Errorf("hf: %s: weight_map is empty", ip)
	}
	byFile := map[string][]string{}
	for name, file := range idx.WeightMap {
		if file == "" || filepath.IsAbs(file) || strings.Contains(file, "..") {
			return nil, fmt.Errorf("hf: %s: weight_map[%q] = %q is not a file name in the directory", ip, name, file)
		}
		byFile[file] = append(byFile[file], name)
	}
	files := make([]string, 0, len(byFile))
	for f := range byFile {
		files = append(files, f)
	}
	sort.Strings(files)
	for _, file := range files {
		path := filepath.Join(dir, file)
		f, err := safetensors.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("hf: shard named by %s: %w", ip, err)
		}
		for _, name := range byFile[file] {
			t, ok := f.Get(name)
			if !ok {
				return nil, fmt.Errorf("hf: %s maps tensor %s to %s, which does not hold it", ip, name, file)
			}
			out[name] = located{t, path}
		}
		for _, t := range f.Tensors {
			if idx.WeightMap[t.Name] != file {
				return nil, fmt.Errorf("hf: %s holds tensor %s, which %s maps to %q", path, t.Name, ip, idx.WeightMap[t.Name])
			}
		}
	}
	return out, nil
}
