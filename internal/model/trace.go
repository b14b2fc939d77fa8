package model

import "strings"

// OpTracer receives the model's per-op spans while it is set as
// Model.Trace (kestrel sets it for the steps recorded in trace.json):
// Begin opens a span for op (of block layer, or -1 outside the blocks)
// and End closes the innermost open one. Spans nest: a block's attention
// holds its GEMMs. Model.Trace is nil by default, which costs one nil
// check per op.
type OpTracer interface {
	Begin(op string, layer int)
	End()
}

// The op names passed to OpTracer.Begin.
const (
	OpEmbedding      = "embedding"
	OpAttention      = "attention"    // ln1, qkv GEMM, QK-Norm, RoPE, attention core, o_proj GEMM
	OpQKVGemm        = "qkv_gemm"     // ln1 · W_qkv
	OpAttnCore       = "attn_core"    // RoPE + softmax(QKᵀ/√d)·V
	OpOProjGemm      = "o_proj_gemm"  // attention output · W_o
	OpMLP            = "mlp"          // ln2, gate/up GEMM, SwiGLU, down GEMM
	OpGateUpGemm     = "gate_up_gemm" // ln2 · W_gate|up
	OpDownGemm       = "down_gemm"    // swiglu · W_down
	OpLMHead         = "lm_head"      // final norm and the lm_head GEMM
	OpLMHeadGemm     = "lm_head_gemm" // lnf · W_lmᵀ
	OpCrossEntropy   = "cross_entropy"
	OpBackwardSuffix = "_backward" // appended to an op's name in the backward pass
)

// opBackward names are the backward ops (constants: no allocation).
const (
	opEmbeddingBwd  = OpEmbedding + OpBackwardSuffix
	opAttentionBwd  = OpAttention + OpBackwardSuffix
	opQKVGemmBwd    = OpQKVGemm + OpBackwardSuffix
	opAttnCoreBwd   = OpAttnCore + OpBackwardSuffix
	opOProjGemmBwd  = OpOProjGemm + OpBackwardSuffix
	opMLPBwd        = OpMLP + OpBackwardSuffix
	opGateUpGemmBwd = OpGateUpGemm + OpBackwardSuffix
	opDownGemmBwd   = OpDownGemm + OpBackwardSuffix
	opLMHeadBwd     = OpLMHead + OpBackwardSuffix
	opLMHeadGemmBwd = OpLMHeadGemm + OpBackwardSuffix
)

// tb opens an op span when a tracer is set.
func (m *Model) tb(op string, layer int) {
	if m.Trace != nil {
		m.Trace.Begin(op, layer)
	}
}

// te closes the innermost op span when a tracer is set.
func (m *Model) te() {
	if m.Trace != nil {
		m.Trace.End()
	}
}

// IsGEMMOp reports whether op (a name OpTracer receives) is one of the
// GEMM ops, forward or backward: the ops whose FLOPs in OpFLOPs are
// exactly those of the GEMMs they run.
func IsGEMMOp(op string) bool {
	switch strings.TrimSuffix(op, OpBackwardSuffix) {
	case OpQKVGemm, OpOProjGemm, OpGateUpGemm, OpDownGemm, OpLMHeadGemm:
		return true
	}
	return false
}

// OpFLOPs returns the FLOPs of a forward + backward pass over tokens
// tokens that FLOPsPerToken credits to each traced op, keyed by the names
// OpTracer receives: every GEMM op and its backward, the attention core at
// its full T×T (no discount for the causal mask or the document mask, as
// MFU counts it), and an MoE layer's active MLP (router, top-k and shared
// experts) under OpMLP. A backward op costs twice its forward:
//
//	GEMM [n × k]·[k × o]:  forward 2·n·k·o,  backward 4·n·k·o (dx and dW)
//	attention core:        forward 4·n·T·d_attn (QKᵀ and P·V), backward twice that
//
// The values sum to FLOPsPerToken·tokens, so an op's FLOPs over its traced
// time is its share of the MFU.
func (m *Model) OpFLOPs(tokens int) map[string]float64 {
	c := m.Cfg
	n := float64(tokens)
	D, F, V := float64(c.DModel), float64(c.MLPHidden), float64(c.Vocab)
	fl := map[string]float64{}
	add := func(op string, fwd float64) {
		fl[op] += fwd
		fl[op+OpBackwardSuffix] += 2 * fwd
	}
	for l := 0; l < c.NLayers; l++ {
		add(OpQKVGemm, 2*n*D*float64(m.qkvDim))
		add(OpOProjGemm, 2*n*float64(m.attDim)*D)
		add(OpAttnCore, 4*n*float64(c.SeqLen)*float64(m.attDim))
		if c.IsMoELayer(l) {
			add(OpMLP, 2*n*c.mlpActiveParams(l))
			continue
		}
		add(OpGateUpGemm, 2*n*D*2*F)
		add(OpDownGemm, 2*n*F*D)
	}
	add(OpLMHeadGemm, 2*n*V*D)
	return fl
}
