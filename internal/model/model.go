// Package model is kestrel's Llama/Qwen3-style transformer: parameters and
// gradients in one flat float32 buffer each, explicit forward and backward
// per layer, activations in an arena sized once, and attention vitals taken
// where the numbers already are (see engine.go; the ops are in
// internal/kernels/ops).
package model

import (
	"errors"
	"time"
)

// ErrNotImplemented is kept for callers written before the engine landed;
// the model no longer returns it.
var ErrNotImplemented = errors.New("model: not implemented yet (see docs/roadmap.md)")

// Tensor is a named view into the flat parameter (and gradient) buffer.
// Names follow Hugging Face Llama/Qwen3 (model.layers.3.self_attn.q_proj.weight).
type Tensor struct {
	Name   string
	Shape  []int
	Offset int // into Model.Params / Model.Grads
	Size   int
	// Kind classifies the tensor for parameter groups: "embedding", "norm",
	// "bias" or "matrix". Weight decay applies to "matrix" by default.
	Kind string
}

// Batch is one micro-batch of B sequences of T tokens.
type Batch struct {
	B, T    int
	Inputs  []int32   // [B*T] token ids
	Targets []int32   // [B*T] next-token ids
	Mask    []float32 // [B*T] loss weights; nil means every position counts
	// SegIDs [B*T], optional: with model.doc_mask a position attends only to
	// earlier positions of the same sequence with the same segment id.
	SegIDs []int32
}

// Stats is what one forward(/backward) pass reports.
type Stats struct {
	Loss   float64 // mean cross-entropy over counted positions (without z-loss)
	ZLoss  float64 // mean z-loss term added to the objective (0 when off)
	Tokens int     // counted positions
	// MoEAux is the auxiliary objective of the MoE layers for this
	// micro-batch (load-balancing α·E·Σ fᵢ·Pᵢ plus router z-loss), added
	// to the gradient; 0 for dense models.
	MoEAux float64

	// ForwardTime is the forward pass including the loss head,
	// BackwardTime the backward pass (0 for Forward). In ForwardBackward
	// the lm_head's gradient GEMMs run inside the loss head, chunk by chunk
	// (head.go); their time counts as backward.
	ForwardTime  time.Duration
	BackwardTime time.Duration
}

// Vitals are the per-step model health numbers (seed-004 names), computed
// inside the forward pass of the last micro-batch.
type Vitals struct {
	MaxAttnLogit          [][]float32 // [layer][head] max pre-softmax attention logit
	AttnEntropy           [][]float32 // [layer][head] mean attention entropy (nats)
	ResidualRMS           []float32   // [layer] RMS of the residual stream after the block
	ActivationOutlierRate []float32   // [layer] fraction of residual activations beyond 6σ
	LogitLSEMean          float32     // mean logsumexp of the output logits
	// MoE holds one entry per mixture-of-experts layer (nil for dense
	// models). After ForwardBackward it covers the step's micro-batches
	// since ZeroGrads; after Forward, that batch alone.
	MoE []MoEVitals
}

// MoEVitals are the routing health numbers of one MoE layer (seed-004
// names with the moe_ prefix). Loads count top-k selections before
// capacity dropping.
type MoEVitals struct {
	Layer           int
	LoadBalanceLoss float32 // E·Σᵢ fᵢ·Pᵢ without α: 1 when balanced, up to E when collapsed
	UtilEntropy     float32 // entropy of the expert loads ÷ ln E: 1 = uniform, 0 = one expert
	TokensMin       float32 // fewest selections of an expert
	TokensMax       float32 // most selections of an expert
	TokensStd       float32 // standard deviation of the selections per expert
	DeadExperts     int     // experts no token selected
	DropRate        float32 // dropped assignments / all assignments (capacity overflow)
}
