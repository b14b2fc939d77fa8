// Package hfrun moves runs to and from Hugging Face. Export (`kestrel
// export`) writes a run's checkpoint as a Hugging Face model directory: the
// weights and config through internal/hf, the run's tokenizer with its
// special tokens, and a model card read from the run's records. Import
// (`kestrel import`) checks a Hugging Face Llama/Qwen3 directory and writes
// a run config that warm-starts from it (init.from = "hf:DIR").
package hfrun

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"

	"github.com/kestrel-lm/kestrel/internal/checkpoint"

	"github.com/kestrel-lm/kestrel/internal/hf"
	"github.com/kestrel-lm/kestrel/internal/safetensors"
	"github.com/kestrel-lm/kestrel/tokenizer"
)

// Options says what to export and where.
type Options struct {
	Run        string // the run directory
	Checkpoint string // last | last-good | step-N | a checkpoint directory ("" = last)
	EMA        bool   // export the EMA weights instead of the raw ones
	Out        string // the Hugging Face directory to write
	Force      bool   // write a model HF cannot express (NoPE, MoE …) anyway
	// Overwrite replaces an existing Out that is not an earlier export
	// (a file or symbolic link never: hf.Write).
	Overwrite bool
	// DType is the weights' dtype: "fp32" ("" too) or "bf16" (BF16
	// safetensors, torch_dtype "bfloat16").
	DType string
	Log   *slog.Logger
}

// Result describes a finished export.
type Result struct {
	Checkpoint string // the checkpoint directory exported
	Step       int
	Arch       string // LlamaForCausalLM | Qwen3ForCausalLM
	Tokens     hf.Tokens
	ByteLevel  bool
	EMA        bool // the EMA weights were exported
	// Refused is the reason HF cannot express the model when Force wrote
	// it anyway ("" otherwise).
	Refused string
}

// Line is the one-line account of an export to out: the checkpoint and
// step, the architecture and the end-of-sequence token.
func (r *Result) Line(out string) string {
	eos := "none (byte-level)"
	if r.Tokens.EOS != nil {
		eos = fmt.Sprintf("%q = %d", r.Tokens.EOS.Content, r.Tokens.EOS.ID)
	}
	return fmt.Sprintf("exported %s (step %d) as %s to %s; eos %s", r.Checkpoint, r.Step, r.Arch, out, eos)
}

// Export writes o.Run's checkpoint to o.Out.
func Export(ctx context.Context, o Options) (*Result, error) {
	dt, err := exportDType(o.DType)
	if err != nil {
		return nil, err
	}
	if err := hf.CheckOut(o.Out, o.Overwrite); err != nil {
		return nil, err
	}
	name := o.Checkpoint
	if name == "" {
		name = "last"
	}
	dir, err := checkpoint.Resolve(o.Run, name)
	if err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	m, l, err := checkpoint.LoadModel(dir, o.EMA, o.Log)
	if err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	res := &Result{Checkpoint: l.Dir, Step: l.State.Step, EMA: o.EMA}
	if err := hf.Expressible(m.Cfg, m.Tensors()); err != nil {
		if !o.Force {
			return nil, fmt.Errorf("export %s: %w (pass --force to write it anyway: stock Hugging Face code will then compute another model)", l.Dir, err)
		}
		res.Refused = err.Error()
	}
	tokJSON, toks, byteLevel, err := runTokenizer(ctx, o.Run, l.State)
	if err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	res.Tokens, res.ByteLevel = toks, byteLevel
	res.Arch = hf.FromModel(m.Cfg, toks).Architectures[0]
	card, err := Card(o.Run, l, res)
	if err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	err = hf.Write(o.Out, hf.Export{Config: m.Cfg, Tensors: m.Tensors(), Params: m.Params, Tokens: toks, Tokenizer: tokJSON, Card: card, Force: o.Force,
		Overwrite: o.Overwrite, DType: dt, Origin: hf.Origin{Run: o.Run, Checkpoint: l.Dir, Step: l.State.Step, EMA: o.EMA}})
	if err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	return res, nil
}

// exportDType maps --dtype to the safetensors dtype.
func exportDType(s string) (safetensors.DType, error) {
	switch s {
	case "", "fp32":
		return safetensors.F32, nil
	case "bf16":
		return safetensors.BF16, nil
	}
	return "", fmt.Errorf("export: --dtype %q: want fp32 or bf16", s)
}

// runTokenizer returns the tokenizer.json to ship and the special tokens.
//
// A byte-level run (state.json tokenizer "bytes") gets a byte-level BPE
// with the 256 bytes as its vocabulary, no merges and no special tokens:
// token id = byte value, as kestrel trained it; its bos/eos ids are null
// (every id is a byte, and byte-level text has no separator).
//
// A dataset run ships the dataset's tokenizer. EOS is the end-of-text
// token (the document separator for separator = "eos"); BOS is the
// separator for separator = "bos", else the tokenizer's BOS (GPT-2 style
// tokenizers use <|endoftext|> for both); PAD is EOS.
func runTokenizer(ctx context.Context, run string, st checkpoint.State) ([]byte, hf.Tokens, bool, error) {
	if st.ByteLevel() {
		tok, err := tokenizer.Train(ctx, slices.Values([]string(nil)), tokenizer.TrainOptions{VocabSize: 256, Special: []string{}})
		if err != nil {
			return nil, hf.Tokens{}, true, err
		}
		b, err := tok.Marshal()
		return b, hf.Tokens{}, true, err
	}
	if st.Tokenizer == "" {
		return nil, hf.Tokens{}, false, fmt.Errorf("run %s: state.json names no tokenizer and model.vocab is %d, not 256 (bytes)", run, st.Model.Vocab)
	}
	ds, err := st.DatasetDir()
	if err != nil {
		return nil, hf.Tokens{}, false, fmt.Errorf("run %s: %w", run, err)
	}
	path := filepath.Join(ds, hf.TokenizerFile)
	tok, err := tokenizer.Load(path)
	if err != nil {
		return nil, hf.Tokens{}, false, fmt.Errorf("run %s was trained on the dataset %s (state.json \"tokenizer\"): %w", run, ds, err)
	}
	if tok.VocabSize() > st.Model.Vocab {
		return nil, hf.Tokens{}, false, fmt.Errorf("run %s: %s has %d tokens but the model's vocabulary is %d", run, path, tok.VocabSize(), st.Model.Vocab)
	}
	special := func(id int32) *hf.Special {
		b, _ := tok.Token(id)
		return &hf.Special{ID: id, Content: string(b)}
	}
	var toks hf.Tokens
	if tok.HasEOT() {
		toks.EOS = special(tok.EOT())
	}
	if id, ok := tok.BOS(); ok {
		toks.BOS = special(id)
	}
	var man struct {
		Separator   string `json:"separator"`
		SeparatorID int32  `json:"separator_id"`
	}
	if b, err := os.ReadFile(filepath.Join(ds, "manifest.json")); err == nil {
		if err := json.Unmarshal(b, &man); err != nil {
			return nil, hf.Tokens{}, false, fmt.Errorf("%s: %w", filepath.Join(ds, "manifest.json"), err)
		}
	}
	switch man.Separator {
	case "eos":
		toks.EOS = special(man.SeparatorID)
	case "bos":
		toks.BOS = special(man.SeparatorID)
	}
	toks.PAD = toks.EOS
	b, err := tok.Marshal()
	return b, toks, false, err
}
