package hf

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/kestrel-lm/kestrel/internal/atomicfile"
	"github.com/kestrel-lm/kestrel/internal/fileguard"
	"github.com/kestrel-lm/kestrel/internal/model"
	"github.com/kestrel-lm/kestrel/internal/safetensors"
)

// Export is what Write puts in a Hugging Face directory.
type Export struct {
	Config  model.Config
	Tensors []model.Tensor // the model's parameter layout
	Params  []float32      // the flat parameter buffer Tensors index
	Tokens  Tokens
	// Tokenizer is the tokenizer.json to ship (Hugging Face's format).
	Tokenizer []byte
	// Card is README.md, the model card.
	Card string
	// Force writes a model Expressible refuses (its config.json then
	// describes a model that computes something else).
	Force bool
	// Overwrite replaces an existing directory that is not an earlier
	// export (no ExportManifestFile); a file or link is never replaced.
	Overwrite bool
	// Origin is what the export manifest records of where the weights
	// came from.
	Origin Origin
	// DType is the weights' dtype in model.safetensors: safetensors.F32
	// ("" too) or safetensors.BF16 (each weight rounded to the nearest
	// bfloat16, config.json's torch_dtype "bfloat16"; half the bytes).
	DType safetensors.DType
}

// ExportManifestFile is the manifest every export carries: kestrel's mark
// on the directory, without which Write replaces no existing directory.
const ExportManifestFile = "kestrel-export.json"

// Origin says where an export's weights came from.
type Origin struct {
	Run        string `json:"run,omitempty"`
	Checkpoint string `json:"checkpoint,omitempty"`
	Step       int    `json:"step,omitempty"`
	EMA        bool   `json:"ema,omitempty"`
}

// exportManifest is ExportManifestFile's contents.
type exportManifest struct {
	Format string   `json:"format"` // "kestrel-hf-export"
	Origin Origin   `json:"origin"`
	Files  []string `json:"files"`
	DType  string   `json:"dtype,omitempty"` // the weights' safetensors dtype
}

// Write installs dir atomically (a temporary directory renamed into
// place) with config.json, model.safetensors (F32 or, with e.DType, BF16; the "pt" format
// metadata transformers requires), generation_config.json, tokenizer.json,
// tokenizer_config.json, special_tokens_map.json, README.md and the export
// manifest (ExportManifestFile). An existing dir is replaced only when it
// is empty, carries the manifest (an earlier export) or e.Overwrite is
// set; a file or symbolic link at dir is never replaced (fileguard.Dir).
func Write(dir string, e Export) error {
	if err := Expressible(e.Config, e.Tensors); err != nil && !e.Force {
		return fmt.Errorf("hf: %w (export anyway with --force: stock Hugging Face code will then compute another model)", err)
	}
	if err := CheckOut(dir, e.Overwrite); err != nil {
		return err
	}
	conv, torchDType := safetensors.FromFloat32, "float32"
	switch e.DType {
	case "", safetensors.F32:
		e.DType = safetensors.F32
	case safetensors.BF16:
		conv, torchDType = safetensors.FromFloat32BF16, "bfloat16"
	default:
		return fmt.Errorf("hf: export dtype %q: want F32 or BF16", e.DType)
	}
	ts := make([]safetensors.Tensor, len(e.Tensors))
	for i, t := range e.Tensors {
		if t.Offset+t.Size > len(e.Params) {
			return fmt.Errorf("hf: tensor %s [%d, %d) outside the %d parameters", t.Name, t.Offset, t.Offset+t.Size, len(e.Params))
		}
		ts[i] = conv(t.Name, t.Shape, e.Params[t.Offset:t.Offset+t.Size])
	}
	hc := FromModel(e.Config, e.Tokens)
	hc.TorchDType = torchDType
	files := map[string]any{
		ConfigFile:           hc,
		GenerationFile:       generationConfig(e.Tokens),
		TokenizerConfigFile:  tokenizerConfig(e.Tokens, e.Config.SeqLen),
		SpecialTokensMapFile: specialTokensMap(e.Tokens),
	}
	files[ExportManifestFile] = exportManifest{Format: "kestrel-hf-export", Origin: e.Origin, DType: string(e.DType),
		Files: []string{CardFile, ConfigFile, GenerationFile, WeightsFile, SpecialTokensMapFile, TokenizerFile, TokenizerConfigFile}}
	err := atomicfile.WriteDir(dir, func(tmp string) error {
		if err := safetensors.WriteFile(filepath.Join(tmp, WeightsFile), ts, map[string]string{"format": "pt"}); err != nil {
			return err
		}
		for name, v := range files {
			var b bytes.Buffer
			enc := json.NewEncoder(&b)
			enc.SetEscapeHTML(false) // "<|endoftext|>" as written, not \u003c…
			enc.SetIndent("", "  ")
			if err := enc.Encode(v); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			if err := os.WriteFile(filepath.Join(tmp, name), b.Bytes(), 0o644); err != nil {
				return err
			}
		}
		if err := os.WriteFile(filepath.Join(tmp, TokenizerFile), e.Tokenizer, 0o644); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(tmp, CardFile), []byte(e.Card), 0o644)
	})
	if err != nil {
		return fmt.Errorf("hf: export to %s: %w", dir, err)
	}
	return nil
}

// CheckOut returns nil when Write may write dir: it does not exist, is
// empty, is an earlier export (it carries ExportManifestFile) or, with
// overwrite, is any directory. A regular file, a symbolic link or another
// directory is refused with an error naming it (fileguard.Dir).
func CheckOut(dir string, overwrite bool) error {
	guard := fileguard.Dir{Path: dir, What: "Hugging Face export", Markers: []string{ExportManifestFile}, Overwrite: overwrite, Flag: "--overwrite"}
	if err := guard.Check(); err != nil {
		return fmt.Errorf("hf: export: %w", err)
	}
	return nil
}

// generationConfig is generation_config.json: the ids generate() stops
// at and pads with.
func generationConfig(t Tokens) map[string]any {
	g := map[string]any{}
	if t.BOS != nil {
		g["bos_token_id"] = t.BOS.ID
	}
	if t.EOS != nil {
		g["eos_token_id"] = t.EOS.ID
	}
	if t.PAD != nil {
		g["pad_token_id"] = t.PAD.ID
	}
	return g
}

// specialTokensMap is special_tokens_map.json.
func specialTokensMap(t Tokens) map[string]string {
	m := map[string]string{}
	for key, s := range map[string]*Special{"bos_token": t.BOS, "eos_token": t.EOS, "pad_token": t.PAD} {
		if s != nil {
			m[key] = s.Content
		}
	}
	return m
}

// tokenizerConfig is tokenizer_config.json: the fast tokenizer class,
// the special tokens, and no BOS/EOS added on encode (kestrel's training
// text carried its separators itself).
func tokenizerConfig(t Tokens, seqLen int) map[string]any {
	c := map[string]any{
		"tokenizer_class":              "PreTrainedTokenizerFast",
		"model_max_length":             seqLen,
		"add_bos_token":                false,
		"add_eos_token":                false,
		"clean_up_tokenization_spaces": false,
	}
	for key, s := range specialTokensMap(t) {
		c[key] = s
	}
	return c
}
