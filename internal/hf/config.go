// Package hf maps kestrel models to and from Hugging Face Llama/Qwen3
// model directories: config.json, model.safetensors (single or sharded
// with model.safetensors.index.json) and the small JSON files beside them.
// It knows nothing about runs; internal/hfexport writes a run's checkpoint
// through it, and internal/train warm-starts from a directory it reads.
package hf

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"github.com/kestrel-lm/kestrel/internal/fileguard"
	"github.com/kestrel-lm/kestrel/internal/model"
)

// File names of a Hugging Face model directory.
const (
	ConfigFile           = "config.json"
	WeightsFile          = "model.safetensors"
	IndexFile            = "model.safetensors.index.json"
	GenerationFile       = "generation_config.json"
	TokenizerFile        = "tokenizer.json"
	TokenizerConfigFile  = "tokenizer_config.json"
	SpecialTokensMapFile = "special_tokens_map.json"
	CardFile             = "README.md"
)

// Architectures kestrel writes and reads.
const (
	LlamaArch = "LlamaForCausalLM"
	Qwen3Arch = "Qwen3ForCausalLM"
)

// Config is the part of a Llama/Qwen3 config.json kestrel writes and
// reads. Token ids are pointers so that an absent id is written as null:
// Hugging Face's Llama defaults (bos 1, eos 2) would otherwise name raw
// bytes of kestrel's vocabularies.
type Config struct {
	Architectures         []string `json:"architectures"`
	ModelType             string   `json:"model_type"`
	VocabSize             int      `json:"vocab_size"`
	HiddenSize            int      `json:"hidden_size"`
	IntermediateSize      int      `json:"intermediate_size"`
	NumHiddenLayers       int      `json:"num_hidden_layers"`
	NumAttentionHeads     int      `json:"num_attention_heads"`
	NumKeyValueHeads      int      `json:"num_key_value_heads"`
	HeadDim               int      `json:"head_dim"`
	MaxPositionEmbeddings int      `json:"max_position_embeddings"`
	RopeTheta             float64  `json:"rope_theta"`
	RopeScaling           any      `json:"rope_scaling"`
	// RopeParameters is transformers v5's form of rope_theta/rope_scaling;
	// kestrel writes both (each version reads its own) and reads either.
	RopeParameters    *RopeParameters `json:"rope_parameters,omitempty"`
	RMSNormEps        float64         `json:"rms_norm_eps"`
	HiddenAct         string          `json:"hidden_act"`
	TieWordEmbeddings bool            `json:"tie_word_embeddings"`
	AttentionBias     bool            `json:"attention_bias"`
	AttentionDropout  float64         `json:"attention_dropout"`
	MLPBias           bool            `json:"mlp_bias,omitempty"`
	UseSlidingWindow  bool            `json:"use_sliding_window,omitempty"`
	InitializerRange  float64         `json:"initializer_range"`
	BOSTokenID        *int32          `json:"bos_token_id"`
	EOSTokenID        *int32          `json:"eos_token_id"`
	TorchDType        string          `json:"torch_dtype"`
	UseCache          bool            `json:"use_cache"`
}

// Special is one special token: its id and its text in tokenizer.json.
type Special struct {
	ID      int32
	Content string
}

// RopeParameters is config.json's rope_parameters (transformers v5).
type RopeParameters struct {
	RopeType  string  `json:"rope_type"`
	RopeTheta float64 `json:"rope_theta"`
}

// Tokens are the special tokens of a model (nil = none): BOS the
// beginning-of-text token, EOS the end-of-text token (the document
// separator kestrel trained with), PAD the token generation pads with.
type Tokens struct {
	BOS, EOS, PAD *Special
}

func (s *Special) id() *int32 {
	if s == nil {
		return nil
	}
	id := s.ID
	return &id
}

// ErrNotExpressible marks a model that Hugging Face's Llama/Qwen3 cannot
// run as trained; errors.Is finds it in Expressible's error.
var ErrNotExpressible = errors.New("architecture not expressible as Hugging Face Llama/Qwen3")

// Expressible reports every feature of c (and every tensor of ts, the
// model's parameters) that a stock Llama/Qwen3 forward pass would not
// compute as kestrel does: NoPE layers, and any tensor outside the
// Llama/Qwen3 layout (mixture-of-experts routers and experts, for one).
// Training-only settings (document masking, z-loss) are fine.
func Expressible(c model.Config, ts []model.Tensor) error {
	var errs []error
	if c.NoPEEvery > 0 {
		errs = append(errs, fmt.Errorf("model.nope_every = %d: every %d-th layer has no RoPE, which Llama/Qwen3 always apply (stock logits would differ)", c.NoPEEvery, c.NoPEEvery))
	}
	if c.MoEEvery > 0 {
		errs = append(errs, fmt.Errorf("model.moe_every = %d: mixture-of-experts layers; kestrel export writes dense Llama/Qwen3 directories only (a Qwen3-MoE export is not built: docs/moe.md)", c.MoEEvery))
	}
	want := map[string][]int{}
	for _, t := range ExpectedTensors(c) {
		want[t.Name] = t.Shape
	}
	var extra []string
	for _, t := range ts {
		s, ok := want[t.Name]
		if !ok {
			extra = append(extra, t.Name)
			continue
		}
		if !slices.Equal(s, t.Shape) {
			errs = append(errs, fmt.Errorf("tensor %s has shape %v, Llama/Qwen3 expect %v", t.Name, t.Shape, s))
		}
		delete(want, t.Name)
	}
	if len(extra) > 0 {
		if len(extra) > 6 {
			extra = append(extra[:6], fmt.Sprintf("… %d more", len(extra)-6))
		}
		errs = append(errs, fmt.Errorf("tensors outside the Llama/Qwen3 layout (mixture-of-experts or another block): %s", strings.Join(extra, ", ")))
	}
	for name := range want {
		errs = append(errs, fmt.Errorf("tensor %s that Llama/Qwen3 expect is missing from the model", name))
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %w", ErrNotExpressible, errors.Join(errs...))
}

// FromModel renders c as a config.json: Qwen3ForCausalLM when QK-Norm is
// on, LlamaForCausalLM otherwise, with the given special tokens. It writes
// no kestrel-only keys: what HF would ignore is refused by Expressible.
func FromModel(c model.Config, tok Tokens) Config {
	arch, typ := LlamaArch, "llama"
	if c.QKNorm {
		arch, typ = Qwen3Arch, "qwen3"
	}
	return Config{
		Architectures:         []string{arch},
		ModelType:             typ,
		VocabSize:             c.Vocab,
		HiddenSize:            c.DModel,
		IntermediateSize:      c.MLPHidden,
		NumHiddenLayers:       c.NLayers,
		NumAttentionHeads:     c.NHeads,
		NumKeyValueHeads:      c.NKVHeads,
		HeadDim:               c.DModel / max(c.NHeads, 1),
		MaxPositionEmbeddings: c.SeqLen,
		RopeTheta:             c.RopeTheta,
		RopeParameters:        &RopeParameters{RopeType: "default", RopeTheta: c.RopeTheta},
		RMSNormEps:            c.NormEps,
		HiddenAct:             "silu",
		TieWordEmbeddings:     c.Tied,
		InitializerRange:      c.InitStd,
		BOSTokenID:            tok.BOS.id(),
		EOSTokenID:            tok.EOS.id(),
		TorchDType:            "float32",
		UseCache:              true,
	}
}

// MaxImportSeqLen caps the seq_len ToModel takes from
// max_position_embeddings (RoPE has no position table, so a shorter
// context loses no weights; long contexts would only size the arena).
const MaxImportSeqLen = 4096

// ToModel turns a Llama/Qwen3 config.json into the kestrel model config
// whose forward pass matches it. Settings kestrel cannot compute (biases,
// RoPE scaling, sliding windows, another activation, head_dim other than
// hidden_size / num_attention_heads) are errors naming the key.
func (h Config) ToModel() (model.Config, error) {
	var errs []error
	bad := func(key, format string, a ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", key, fmt.Sprintf(format, a...)))
	}
	qk := false
	switch {
	case len(h.Architectures) != 1:
		bad("architectures", "%v: want exactly one of %s, %s", h.Architectures, LlamaArch, Qwen3Arch)
	case h.Architectures[0] == LlamaArch:
	case h.Architectures[0] == Qwen3Arch:
		qk = true
	default:
		bad("architectures", "%q is not supported (want %s or %s)", h.Architectures[0], LlamaArch, Qwen3Arch)
	}
	if h.HiddenAct != "" && h.HiddenAct != "silu" {
		bad("hidden_act", "%q: kestrel's MLP is SwiGLU (silu)", h.HiddenAct)
	}
	if h.AttentionBias {
		bad("attention_bias", "true: kestrel's projections have no bias")
	}
	if h.MLPBias {
		bad("mlp_bias", "true: kestrel's projections have no bias")
	}
	if h.RopeScaling != nil {
		bad("rope_scaling", "%v: kestrel implements plain RoPE only", h.RopeScaling)
	}
	if h.UseSlidingWindow {
		bad("use_sliding_window", "true: kestrel attends over the whole context")
	}
	kv := h.NumKeyValueHeads
	if kv == 0 {
		kv = h.NumAttentionHeads
	}
	hd := h.HeadDim
	if hd == 0 && qk {
		hd = 128 // transformers' Qwen3Config default
	}
	if h.NumAttentionHeads > 0 && hd != 0 && hd*h.NumAttentionHeads != h.HiddenSize {
		bad("head_dim", "%d: kestrel needs head_dim = hidden_size / num_attention_heads = %d", hd, h.HiddenSize/h.NumAttentionHeads)
	}
	theta, eps := h.RopeTheta, h.RMSNormEps
	if rp := h.RopeParameters; rp != nil {
		if rp.RopeType != "" && rp.RopeType != "default" {
			bad("rope_parameters.rope_type", "%q: kestrel implements plain RoPE only", rp.RopeType)
		}
		if h.RopeTheta != 0 && rp.RopeTheta != 0 && rp.RopeTheta != h.RopeTheta {
			bad("rope_parameters.rope_theta", "%g disagrees with rope_theta %g", rp.RopeTheta, h.RopeTheta)
		}
		if rp.RopeTheta != 0 {
			theta = rp.RopeTheta
		}
	}
	if theta == 0 {
		theta = 10000 // the Llama and Qwen3 default
	}
	if eps == 0 {
		eps = 1e-6 // the Llama/Qwen3 default
	}
	initStd := h.InitializerRange
	if !(initStd > 0) || math.IsInf(initStd, 0) {
		initStd = 0.02
	}
	// the [model] defaults for what HF does not say (the MoE settings of
	// a dense model), as a config file that leaves them out gets them
	c := model.DefaultConfig()
	c.Vocab, c.DModel, c.NLayers = h.VocabSize, h.HiddenSize, h.NumHiddenLayers
	c.NHeads, c.NKVHeads, c.MLPHidden = h.NumAttentionHeads, kv, h.IntermediateSize
	c.SeqLen, c.RopeTheta, c.NormEps = min(h.MaxPositionEmbeddings, MaxImportSeqLen), theta, eps
	c.QKNorm, c.Tied, c.InitStd = qk, h.TieWordEmbeddings, initStd
	c.NoPEEvery, c.ZLoss, c.DocMask, c.MoEEvery = 0, 0, false, 0
	if err := c.Validate(); err != nil {
		errs = append(errs, err)
	}
	return c, errors.Join(errs...)
}

// MaxJSONBytes bounds the JSON files of a Hugging Face directory that
// are read whole (config.json, the shard index).
const MaxJSONBytes = 16 << 20

// ReadConfig reads and checks dir/config.json, returning it with the
// kestrel model config it maps to; errors name the file.
func ReadConfig(dir string) (Config, model.Config, error) {
	path := filepath.Join(dir, ConfigFile)
	b, err := fileguard.ReadFile(path, MaxJSONBytes) // a regular file, bounded
	if err != nil {
		return Config{}, model.Config{}, fmt.Errorf("hf: %w", err)
	}
	var h Config
	if err := json.Unmarshal(b, &h); err != nil {
		return Config{}, model.Config{}, fmt.Errorf("hf: %s: %w", path, err)
	}
	// An absent tie_word_embeddings is false for LlamaConfig and
	// Qwen3Config alike, as json leaves it.
	c, err := h.ToModel()
	if err != nil {
		return h, c, fmt.Errorf("hf: %s: %w", path, err)
	}
	return h, c, nil
}

// ExpectedTensors lists the tensors of a Llama/Qwen3 model of c, in
// kestrel's layout order, with their shapes. kestrel's parameter names are
// Hugging Face's, so this is also the name mapping (the identity).
func ExpectedTensors(c model.Config) []model.Tensor {
	hd := c.DModel / max(c.NHeads, 1)
	var ts []model.Tensor
	add := func(name string, shape ...int) { ts = append(ts, model.Tensor{Name: name, Shape: shape}) }
	add("model.embed_tokens.weight", c.Vocab, c.DModel)
	for l := 0; l < c.NLayers; l++ {
		p := fmt.Sprintf("model.layers.%d.", l)
		add(p+"input_layernorm.weight", c.DModel)
		add(p+"self_attn.q_proj.weight", c.NHeads*hd, c.DModel)
		add(p+"self_attn.k_proj.weight", c.NKVHeads*hd, c.DModel)
		add(p+"self_attn.v_proj.weight", c.NKVHeads*hd, c.DModel)
		add(p+"self_attn.o_proj.weight", c.DModel, c.NHeads*hd)
		if c.QKNorm {
			add(p+"self_attn.q_norm.weight", hd)
			add(p+"self_attn.k_norm.weight", hd)
		}
		add(p+"post_attention_layernorm.weight", c.DModel)
		add(p+"mlp.gate_proj.weight", c.MLPHidden, c.DModel)
		add(p+"mlp.up_proj.weight", c.MLPHidden, c.DModel)
		add(p+"mlp.down_proj.weight", c.DModel, c.MLPHidden)
	}
	add("model.norm.weight", c.DModel)
	if !c.Tied {
		add("lm_head.weight", c.Vocab, c.DModel)
	}
	return ts
}
