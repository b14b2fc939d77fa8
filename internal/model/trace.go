package model

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
