package model

import (
	"errors"
	"fmt"
	"math"
)

// Config describes a Llama/Qwen3-style decoder-only transformer. It is the
// [model] section of a kestrel run config; every field is documented by its
// comment tag, which `kestrel config --defaults` prints.
type Config struct {
	Vocab     int     `toml:"vocab" comment:"vocabulary size (256 for byte-level data; set from the tokenizer for datasets)"`
	DModel    int     `toml:"d_model" comment:"width of the residual stream"`
	NLayers   int     `toml:"n_layers" comment:"number of transformer blocks"`
	NHeads    int     `toml:"n_heads" comment:"number of query heads; head_dim = d_model / n_heads"`
	NKVHeads  int     `toml:"n_kv_heads" comment:"number of key/value heads (GQA); must divide n_heads"`
	MLPHidden int     `toml:"mlp_hidden" comment:"hidden width of the SwiGLU MLP"`
	SeqLen    int     `toml:"seq_len" comment:"context length in tokens"`
	RopeTheta float64 `toml:"rope_theta" comment:"RoPE base frequency θ"`
	NormEps   float64 `toml:"norm_eps" comment:"epsilon of RMSNorm"`
	QKNorm    bool    `toml:"qk_norm" comment:"RMSNorm on queries and keys per head with learned gains (OLMo 2 / Qwen3 / Marin 32B)"`
	Tied      bool    `toml:"tied_embeddings" comment:"share the input embedding with the output projection"`
	NoPEEvery int     `toml:"nope_every" comment:"0 = RoPE in every layer; k = no positional encoding in every k-th layer (RNoPE)"`
	ZLoss     float64 `toml:"z_loss" comment:"weight λ of the z-loss λ·logsumexp² (0 = off; 1e-4 is the usual value)"`
	InitStd   float64 `toml:"init_std" comment:"std of the truncated-normal (±3σ) initialisation; output projections are scaled by 1/sqrt(2·n_layers)"`
	DocMask   bool    `toml:"doc_mask" comment:"intra-document attention mask: tokens attend only within their own document"`

	// Mixture of experts (moe.go). Off (dense MLPs everywhere) while
	// moe_every is 0; the other moe_ fields are read only when it is > 0.
	MoEEvery          int     `toml:"moe_every" comment:"0 = dense MLP in every layer; k = the MLP of every k-th layer (layers with (l+1) % k == 0, as HF decoder_sparse_step; 1 = all) is a mixture of experts"`
	MoEExperts        int     `toml:"moe_experts" comment:"number of routed experts E of an MoE layer"`
	MoETopK           int     `toml:"moe_top_k" comment:"experts each token is routed to (1 <= top_k <= moe_experts)"`
	MoEExpertHidden   int     `toml:"moe_expert_hidden" comment:"hidden width of each SwiGLU expert (and of the shared expert)"`
	MoESharedExpert   bool    `toml:"moe_shared_expert" comment:"add one always-on SwiGLU expert of width moe_expert_hidden, without a gate (DeepSeek-style)"`
	MoENormTopK       bool    `toml:"moe_norm_topk" comment:"renormalise the k selected softmax probabilities to sum to 1 before weighting the experts (Qwen3-MoE norm_topk_prob); false = use the raw softmax probabilities"`
	MoECapacityFactor float64 `toml:"moe_capacity_factor" comment:"expert capacity ceil(cf·N·top_k/E) per micro-batch of N tokens; assignments beyond it are dropped (the token keeps its residual), counted in moe_drop_rate; 0 = no limit (dropless)"`
	MoEAuxLossAlpha   float64 `toml:"moe_aux_loss_alpha" comment:"weight α of the load-balancing loss α·E·Σᵢ fᵢ·Pᵢ (Switch); fᵢ = share of top-k assignments, Pᵢ = mean router probability, over the step's global batch (docs/moe.md); 0 = off"`
	MoERouterZLoss    float64 `toml:"moe_router_z_loss" comment:"weight of the router z-loss mean logsumexp(router logits)² (ST-MoE; 1e-3 is usual); 0 = off"`
	MoEBalance        string  `toml:"moe_balance" comment:"load balancing: aux (the α loss only) or bias (DeepSeek-V3 auxiliary-loss-free: a per-expert bias added to the scores for top-k selection only, after each applied step b_i += rate·sign(mean load − load_i); the α loss still applies when > 0)"`
	MoEBiasRate       float64 `toml:"moe_bias_update_rate" comment:"update rate γ of the per-expert routing bias with moe_balance = bias (DeepSeek-V3: 0.001)"`
}

// DefaultConfig returns the defaults of the [model] section: a small model
// that trains quickly on byte-level Shakespeare.
func DefaultConfig() Config {
	return Config{
		Vocab:     256,
		DModel:    128,
		NLayers:   4,
		NHeads:    4,
		NKVHeads:  4,
		MLPHidden: 384,
		SeqLen:    64,
		RopeTheta: 10000,
		NormEps:   1e-5,
		InitStd:   0.02,

		MoEExperts:      8,
		MoETopK:         2,
		MoEExpertHidden: 96,
		MoENormTopK:     true,
		MoEAuxLossAlpha: 0.01,
		MoERouterZLoss:  0.001,
		MoEBalance:      "aux",
		MoEBiasRate:     0.001,
	}
}

// The largest sizes Validate accepts. Far above anything a CPU trains,
// they keep every size computation of the model (parameter counts, buffer
// lengths, memory estimates) inside an int64: with all of them at their
// maximum a model has under 2^50 parameters.
const (
	MaxVocab     = 1 << 24 // token ids are int32; the largest tokenizers have ~2^18
	MaxDModel    = 1 << 16
	MaxLayers    = 1 << 12
	MaxMLPHidden = 1 << 18
	MaxSeqLen    = 1 << 20
)

// Validate reports every inconsistent field, naming it as in the config
// file: sizes must be positive and at most their Max constant, head_dim
// must be even, n_kv_heads must divide n_heads, and the float settings
// must be in range (and not NaN).
func (c Config) Validate() error {
	var errs []error
	size := func(name string, v, most int) {
		switch {
		case v <= 0:
			errs = append(errs, fmt.Errorf("model.%s must be > 0, got %d", name, v))
		case v > most:
			errs = append(errs, fmt.Errorf("model.%s must be at most %d, got %d", name, most, v))
		}
	}
	size("vocab", c.Vocab, MaxVocab)
	size("d_model", c.DModel, MaxDModel)
	size("n_layers", c.NLayers, MaxLayers)
	size("n_heads", c.NHeads, MaxDModel)
	size("n_kv_heads", c.NKVHeads, MaxDModel)
	size("mlp_hidden", c.MLPHidden, MaxMLPHidden)
	size("seq_len", c.SeqLen, MaxSeqLen)
	if c.NHeads > 0 && c.DModel%c.NHeads != 0 {
		errs = append(errs, fmt.Errorf("model.d_model (%d) must be divisible by model.n_heads (%d)", c.DModel, c.NHeads))
	}
	if c.NKVHeads > 0 && c.NHeads%c.NKVHeads != 0 {
		errs = append(errs, fmt.Errorf("model.n_kv_heads (%d) must divide model.n_heads (%d)", c.NKVHeads, c.NHeads))
	}
	if c.NHeads > 0 && c.DModel%c.NHeads == 0 && (c.DModel/c.NHeads)%2 != 0 {
		errs = append(errs, fmt.Errorf("model head_dim (d_model/n_heads = %d) must be even for RoPE", c.DModel/c.NHeads))
	}
	if c.NoPEEvery < 0 {
		errs = append(errs, fmt.Errorf("model.nope_every must be >= 0, got %d", c.NoPEEvery))
	}
	if !(c.RopeTheta > 0) || math.IsInf(c.RopeTheta, 0) {
		errs = append(errs, fmt.Errorf("model.rope_theta must be a finite number > 0, got %g", c.RopeTheta))
	}
	if !(c.NormEps > 0) || math.IsInf(c.NormEps, 0) {
		errs = append(errs, fmt.Errorf("model.norm_eps must be a finite number > 0, got %g", c.NormEps))
	}
	if !(c.ZLoss >= 0) || math.IsInf(c.ZLoss, 0) {
		errs = append(errs, fmt.Errorf("model.z_loss must be a finite number >= 0, got %g", c.ZLoss))
	}
	if !(c.InitStd > 0) || math.IsInf(c.InitStd, 0) {
		errs = append(errs, fmt.Errorf("model.init_std must be a finite number > 0, got %g", c.InitStd))
	}
	errs = append(errs, c.validateMoE()...)
	return errors.Join(errs...)
}
