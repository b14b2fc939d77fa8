package model

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/kestrel-lm/kestrel/internal/kernels"
	"github.com/kestrel-lm/kestrel/internal/kernels/ops"
)

// Model is a Llama/Qwen3-style decoder: token embedding, n_layers pre-norm
// blocks x += attn(rmsnorm(x)); x += mlp(rmsnorm(x)), a final RMSNorm and
// an lm_head (or the embedding, when tied). Params and Grads are one flat
// buffer each; Tensors names the views. A Model is not safe for concurrent
// use.
type Model struct {
	Cfg    Config
	Params []float32
	Grads  []float32
	// GradsReady, when set, hears each part of Grads that backward has
	// finished for this pass (gradhook.go), so data-parallel training can
	// start its all-reduce while the rest of backward runs.
	GradsReady func(lo, hi int)

	geometry         // derived from Cfg by New, never written after: replicas share it
	p, g     weights // views into Params and Grads

	a        arena
	outN     int // positions whose logits the last Forward left in a.logits (0: none)
	headRows int // rows per chunk of the training head before rounding to kc (0: headChunkBytes of logits; head.go)
	vit      Vitals
	attn     ops.Attention
	lastB    int
	prec     ops.Precision // the products' arithmetic (SetPrecision)
	// startAcc: the next ForwardBackward writes Grads (StartAccumulation);
	// gw: the pass under way writes them (gradBeta, gradhook.go)
	startAcc, gw bool

	// long-lived tasks handed to the worker pool (pointers: no allocation)
	tEmb  embedTask
	tRMS  rmsFwdTask
	tRMSB rmsBwdTask
	tHNB  headNormBwdTask
	tSwi  swigluTask
	tCE   ceTask
	tVit  residVitTask
	tQK   qkPrepTask

	inf inferScratch // the forward-only path's buffers (infer.go)
	moe moeState     // mixture-of-experts layers (moe.go); empty for dense models
	// Trace, when set, receives per-op spans (see OpTracer); nil = off.
	Trace OpTracer
}

// geometry is the part of a Model that New derives from its config and
// nothing writes after: the tensors' places, the head sizes and the RoPE
// tables. A Replica shares it whole, so a field added here is shared and
// one added to Model itself is each replica's own.
type geometry struct {
	tensors            []Tensor
	byName             map[string]int
	hd, qkvDim, attDim int
	cos, sin           []float32
}

// layerW holds the views of one block's parameters (or gradients).
type layerW struct {
	ln1, qkv, wo, qn, kn, ln2, gu, down []float32
	moe                                 *moeW // MoE layers (gu and down nil), moe.go
}

type weights struct {
	emb, lnf, lm []float32
	layers       []layerW
}

// New validates cfg, lays out the parameters and initialises them
// deterministically from seed: truncated normal N(0, init_std²) cut at ±3σ,
// o_proj and down_proj scaled by 1/√(2·n_layers), norm gains 1.
func New(cfg Config, seed uint64) (*Model, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("model config: %w", err)
	}
	m := &Model{Cfg: cfg, geometry: geometry{byName: map[string]int{}}}
	m.hd, m.attDim, m.qkvDim = cfg.dims()
	var off int
	m.tensors, off = cfg.layout()
	for i, t := range m.tensors {
		m.byName[t.Name] = i
	}
	m.Params = kernels.MakeBuffer(off)
	m.Grads = kernels.MakeBuffer(off)
	m.p = m.views(m.Params)
	m.g = m.views(m.Grads)
	m.init(seed)
	m.vit = newVitals(cfg) // before initMoE, which adds its layers' MoE vitals
	m.initMoE()

	half := m.hd / 2
	m.cos = make([]float32, cfg.SeqLen*half)
	m.sin = make([]float32, cfg.SeqLen*half)
	ops.RoPETables(m.cos, m.sin, cfg.SeqLen, m.hd, cfg.RopeTheta)
	return m, nil
}

// dims returns head_dim and the widths of the attention output and of the
// fused q/k/v projection.
func (c Config) dims() (hd, attDim, qkvDim int) {
	hd = c.DModel / c.NHeads
	return hd, c.NHeads * hd, (c.NHeads + 2*c.NKVHeads) * hd
}

// layout lays out the parameter tensors of a valid config in their fixed
// order in the flat buffer and returns them with the buffer's length.
// New and NumParams share it.
func (c Config) layout() ([]Tensor, int) {
	D, H, KV, F, V := c.DModel, c.NHeads, c.NKVHeads, c.MLPHidden, c.Vocab
	hd, _, _ := c.dims()
	var ts []Tensor
	off := 0
	add := func(name, kind string, shape ...int) {
		n := 1
		for _, s := range shape {
			n *= s
		}
		ts = append(ts, Tensor{Name: name, Shape: shape, Offset: off, Size: n, Kind: kind})
		off += n
	}
	add("model.embed_tokens.weight", "embedding", V, D)
	for l := 0; l < c.NLayers; l++ {
		p := "model.layers." + strconv.Itoa(l) + "."
		add(p+"input_layernorm.weight", "norm", D)
		// q, k, v adjacent: one GEMM computes all three.
		add(p+"self_attn.q_proj.weight", "matrix", H*hd, D)
		add(p+"self_attn.k_proj.weight", "matrix", KV*hd, D)
		add(p+"self_attn.v_proj.weight", "matrix", KV*hd, D)
		add(p+"self_attn.o_proj.weight", "matrix", D, H*hd)
		if c.QKNorm {
			add(p+"self_attn.q_norm.weight", "norm", hd)
			add(p+"self_attn.k_norm.weight", "norm", hd)
		}
		add(p+"post_attention_layernorm.weight", "norm", D)
		if c.IsMoELayer(l) {
			c.moeLayout(p, add)
			continue
		}
		// gate and up adjacent: one GEMM computes both.
		add(p+"mlp.gate_proj.weight", "matrix", F, D)
		add(p+"mlp.up_proj.weight", "matrix", F, D)
		add(p+"mlp.down_proj.weight", "matrix", D, F)
	}
	add("model.norm.weight", "norm", D)
	if !c.Tied {
		add("lm_head.weight", "matrix", V, D)
	}
	return ts, off
}

// NumParams is the number of parameters a model of c has (New's layout,
// without allocating it), or an error when c is invalid. Within the bounds
// Validate enforces it cannot overflow.
func (c Config) NumParams() (int, error) {
	if err := c.Validate(); err != nil {
		return 0, err
	}
	_, n := c.layout()
	return n, nil
}

func (m *Model) views(buf []float32) weights {
	at := func(name string) []float32 {
		t := m.tensors[m.byName[name]]
		return buf[t.Offset : t.Offset+t.Size : t.Offset+t.Size]
	}
	span := func(first, last string) []float32 {
		a := m.tensors[m.byName[first]]
		b := m.tensors[m.byName[last]]
		return buf[a.Offset : b.Offset+b.Size : b.Offset+b.Size]
	}
	w := weights{emb: at("model.embed_tokens.weight"), lnf: at("model.norm.weight")}
	if m.Cfg.Tied {
		w.lm = w.emb
	} else {
		w.lm = at("lm_head.weight")
	}
	for l := 0; l < m.Cfg.NLayers; l++ {
		p := "model.layers." + strconv.Itoa(l) + "."
		lw := layerW{
			ln1: at(p + "input_layernorm.weight"),
			qkv: span(p+"self_attn.q_proj.weight", p+"self_attn.v_proj.weight"),
			wo:  at(p + "self_attn.o_proj.weight"),
			ln2: at(p + "post_attention_layernorm.weight"),
		}
		if m.Cfg.IsMoELayer(l) {
			lw.moe = m.moeViews(buf, p)
		} else {
			lw.gu = span(p+"mlp.gate_proj.weight", p+"mlp.up_proj.weight")
			lw.down = at(p + "mlp.down_proj.weight")
		}
		if m.Cfg.QKNorm {
			lw.qn = at(p + "self_attn.q_norm.weight")
			lw.kn = at(p + "self_attn.k_norm.weight")
		}
		w.layers = append(w.layers, lw)
	}
	return w
}

func (m *Model) init(seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 0x6b657374726c))
	std := m.Cfg.InitStd
	outStd := std / math.Sqrt(2*float64(m.Cfg.NLayers))
	for _, t := range m.tensors {
		dst := m.Params[t.Offset : t.Offset+t.Size]
		if t.Kind == "norm" {
			for i := range dst {
				dst[i] = 1
			}
			continue
		}
		if t.Kind == "bias" { // the MoE routing bias starts at 0
			continue
		}
		s := std
		if hasSuffix(t.Name, "o_proj.weight") || hasSuffix(t.Name, "down_proj.weight") {
			s = outStd
		}
		for i := range dst {
			z := rng.NormFloat64()
			for z > 3 || z < -3 {
				z = rng.NormFloat64()
			}
			dst[i] = float32(z * s)
		}
	}
}

func hasSuffix(s, suf string) bool { return len(s) >= len(suf) && s[len(s)-len(suf):] == suf }

// Tensors returns the named parameter views in a stable order (embedding,
// then per layer input_layernorm, q/k/v/o_proj, q/k_norm, post-attention
// norm, gate/up/down_proj, then model.norm and lm_head). The slice is
// shared; do not modify it.
func (m *Model) Tensors() []Tensor { return m.tensors }

// Tensor looks a view up by its Hugging Face name.
func (m *Model) Tensor(name string) (Tensor, bool) {
	i, ok := m.byName[name]
	if !ok {
		return Tensor{}, false
	}
	return m.tensors[i], true
}

// NumParams is the number of parameters (the lm_head counts only when untied).
func (m *Model) NumParams() int { return len(m.Params) }

// ZeroGrads clears the gradient buffer.
// It also starts a step's accumulation window: MoE routing statistics
// (load-balancing loss, vitals, the routing-bias update) sum the
// micro-batches from here. StartAccumulation does the same without the
// clear.
func (m *Model) ZeroGrads() {
	clear(m.Grads)
	m.moeResetStep()
	m.startAcc = false
}

// StartAccumulation starts a step's accumulation window as ZeroGrads does,
// without clearing Grads: the next ForwardBackward writes every gradient
// (scale·∂objective/∂θ, whatever Grads held) and the ones after it add, so
// after k passes Grads holds what ZeroGrads and k passes leave (up to the
// sign of exact zeros). Until that pass runs Grads is stale: a caller that
// may run no pass reads it only after ZeroGrads.
func (m *Model) StartAccumulation() {
	m.moeResetStep()
	m.startAcc = true
}

// Vitals returns the health numbers of the last Forward or ForwardBackward.
// The struct is owned by the model and overwritten by the next pass.
func (m *Model) Vitals() *Vitals { return &m.vit }

// FLOPsPerToken is the training cost per token used for MFU:
//
//	6·N + 12·n_layers·seq_len·(n_heads·head_dim)
//
// N counts the parameters of every matrix multiply (q,k,v,o, gate, up,
// down in each layer and the lm_head, tied or not; not the embedding
// lookup or norm gains); 6 = 2 (multiply-add) × 3 (forward, two backward
// products). The attention term counts QKᵀ and P·V forward and backward
// over the full T×T square, as in the PaLM paper's MFU definition, although
// causal attention computes only about half of it.
func (m *Model) FLOPsPerToken() float64 {
	c := m.Cfg
	D, F := float64(c.DModel), float64(c.MLPHidden)
	perLayer := D*float64(m.qkvDim) + float64(m.attDim)*D + 3*D*F
	n := float64(c.NLayers)*perLayer + float64(c.Vocab)*D
	if c.MoEEvery > 0 { // MoE layers count their active parameters (router, top_k + shared experts)
		for l := 0; l < c.NLayers; l++ {
			n += c.mlpActiveParams(l) - 3*D*F
		}
	}
	return 6*n + 12*float64(c.NLayers)*float64(c.SeqLen)*float64(m.attDim)
}

// ---------------------------------------------------------------- arena

// arena holds every activation of one pass for up to maxB sequences of
// seq_len tokens; it is allocated once (and again only when a larger B
// arrives). All slices but logits (and the packed lm_head) are views into
// buf. logits is allocated on its own (ensureLogits): ForwardBackward needs
// only one chunk of rows of the training head (head.go), Forward the B·T
// rows of its batch, so a model that only trains never holds the full
// [N × vocab] logits.
type arena struct {
	maxB   int
	buf    []float32
	logits []float32 // one head chunk [rows × logitsStride(V)], or all N rows (dense [N × V]) after a Forward
	// W_lm packed for the training head's GEMMs when a pass takes more
	// than one chunk (head.go): as the logits GEMM reads it (W_lmᵀ) and as
	// the input-gradient GEMM does (W_lm).
	lmT, lmN kernels.PackedB

	resid                    [][]float32 // [L+1][N*D]
	residMid, ln1, ln2       [][]float32 // [L][N*D]
	rstd1, rstd2             [][]float32 // [L][N]
	qkvRaw, qkv              [][]float32 // [L][N*QKV] (qkvRaw only with QK-Norm)
	qnRstd, knRstd           [][]float32 // [L][N*H], [L][N*KV]
	att                      [][]float32 // [L][B*H*T*T]
	atty                     [][]float32 // [L][N*H*hd]
	gu, h, sig               [][]float32 // [L][N*2F], [L][N*F], [L][N*F]
	lnf, rstdf               []float32
	loss, lse, rowGrad       []float32 // [N]
	rowMax, rowEnt, attnTmp  []float32 // [B*H*T]
	dresid, dln, dqkv, datty []float32
	dgu, dh, datt            []float32
	partial                  []float32 // [normChunks*max(D,hd)]
}

// normChunks is the fixed number of row chunks whose partial norm-gain
// gradients are summed in order, so results do not depend on thread count.
const normChunks = 16

// Bytes reports the arena size in bytes, logits and packed W_lm included.
func (a *arena) Bytes() int {
	return 4 * (len(a.buf) + len(a.logits) + a.lmT.Floats() + a.lmN.Floats())
}

// ArenaBytes returns the bytes of activation memory currently allocated (it
// grows with the largest batch seen: linear in B·T plus the B·H·T² of
// attention probabilities). Training holds one chunk of the head's logits
// (and, with more than one chunk per pass, two packed copies of lm_head);
// a Forward grows the logits to the positions of its batch.
func (m *Model) ArenaBytes() int { return m.a.Bytes() }

// ActivationBytes is the activation memory in bytes a model of c holds to
// run passes over up to B sequences of seq_len tokens: the arena that
// ForwardBackward and Forward size with the same plan (its buffers are
// listed on arena), with the logits of all B·seq_len positions that
// Forward keeps, counted at the training head's padded row stride
// (logitsStride; ForwardBackward alone holds one chunk of them: see
// ArenaBytes) and the training head's packed copies of lm_head when
// B·seq_len tokens take more than one chunk, plus the RoPE tables. The
// arithmetic saturates at math.MaxInt instead of overflowing. It errors
// when c is invalid or B < 1.
func (c Config) ActivationBytes(B int) (int, error) {
	if err := c.Validate(); err != nil {
		return 0, err
	}
	if B < 1 {
		return 0, fmt.Errorf("model: activation memory for B=%d sequences: B must be >= 1", B)
	}
	var a arena
	total := a.plan(c, B, func(*[]float32, int) {})
	total = satAdd(total, satMul(B, c.SeqLen, logitsStride(c.Vocab))) // Forward's logits (ensureLogits)
	if n := satMul(B, c.SeqLen); n < math.MaxInt {
		total = satAdd(total, headPackedFloats(c, n, headChunkFor(0, c.Vocab))) // the packed lm_head (head.go)
	}
	total = satAdd(total, c.moeActivationFloats(B)) // MoE layers' own buffers (moe.go)
	hd, _, _ := c.dims()
	return satMul(4, satAdd(total, satMul(c.SeqLen, hd))), nil // + cos and sin, seq_len·hd/2 each
}

// plan calls want for every buffer of the arena of B sequences, in buffer
// order, with its length in float32s, and returns the total length. It
// sets up the per-layer slice headers of a (the buffers themselves are
// what want places). Lengths saturate at math.MaxInt.
func (a *arena) plan(c Config, B int, want func(dst *[]float32, n int)) int {
	L, D, H, KV, F, T := c.NLayers, c.DModel, c.NHeads, c.NKVHeads, c.MLPHidden, c.SeqLen
	hd, attDim, qkvDim := c.dims()
	N := satMul(B, T)
	total := 0
	add := func(dst *[]float32, n int) {
		want(dst, n)
		total = satAdd(total, n)
	}
	a.resid = make([][]float32, L+1)
	for i := range a.resid {
		add(&a.resid[i], satMul(N, D))
	}
	mk := func(p *[][]float32, n int) {
		*p = make([][]float32, L)
		for i := range *p {
			add(&(*p)[i], n)
		}
	}
	mk(&a.residMid, satMul(N, D))
	mk(&a.ln1, satMul(N, D))
	mk(&a.ln2, satMul(N, D))
	mk(&a.rstd1, N)
	mk(&a.rstd2, N)
	mk(&a.qkv, satMul(N, qkvDim))
	if c.QKNorm {
		mk(&a.qkvRaw, satMul(N, qkvDim))
		mk(&a.qnRstd, satMul(N, H))
		mk(&a.knRstd, satMul(N, KV))
	}
	mk(&a.att, satMul(B, H, T, T))
	mk(&a.atty, satMul(N, attDim))
	mk(&a.gu, satMul(N, 2, F))
	mk(&a.h, satMul(N, F))
	mk(&a.sig, satMul(N, F))
	add(&a.lnf, satMul(N, D))
	add(&a.rstdf, N)
	add(&a.loss, N)
	add(&a.lse, N)
	add(&a.rowGrad, N)
	add(&a.rowMax, satMul(B, H, T))
	add(&a.rowEnt, satMul(B, H, T))
	add(&a.attnTmp, satMul(B, H, T))
	add(&a.dresid, satMul(N, D))
	add(&a.dln, satMul(N, D))
	add(&a.dqkv, satMul(N, qkvDim))
	add(&a.datty, satMul(N, attDim))
	add(&a.dgu, satMul(N, 2, F))
	add(&a.dh, satMul(N, F))
	add(&a.datt, satMul(B, H, T, T))
	add(&a.partial, normChunks*max(D, hd))
	return total
}

// satMul multiplies non-negative ints, saturating at math.MaxInt.
func satMul(xs ...int) int {
	p := 1
	for _, x := range xs {
		if x != 0 && p > math.MaxInt/x {
			return math.MaxInt
		}
		p *= x
	}
	return p
}

// satAdd adds non-negative ints, saturating at math.MaxInt.
func satAdd(a, b int) int {
	if a > math.MaxInt-b {
		return math.MaxInt
	}
	return a + b
}

// ensureArena makes the arena hold B sequences. An arena too large to
// address is an error (the trainer refuses such runs before they start,
// from ActivationBytes).
func (m *Model) ensureArena(B int) error {
	if B <= m.a.maxB {
		return nil
	}
	var sizes []int
	var dsts []*[]float32
	a := arena{maxB: B}
	total := a.plan(m.Cfg, B, func(dst *[]float32, n int) {
		dsts = append(dsts, dst)
		sizes = append(sizes, n)
	})
	// with the logits of all B·seq_len positions that a Forward may need
	if all := satAdd(total, satMul(B, m.Cfg.SeqLen, m.Cfg.Vocab)); all == math.MaxInt || all > math.MaxInt/4 {
		return fmt.Errorf("model: the activation arena for B=%d sequences of %d tokens overflows", B, m.Cfg.SeqLen)
	}
	m.a = arena{} // release the old buffers (logits too) before allocating the new one
	a.buf = kernels.MakeBuffer(total)
	off := 0
	for i, d := range dsts {
		*d = a.buf[off : off+sizes[i] : off+sizes[i]]
		off += sizes[i]
	}
	m.a = a
	return nil
}

// ensureLogits makes a.logits hold rows rows of logits at the training
// head's row stride (logitsStride; Forward's dense rows fit too). rows is
// at most maxB·seq_len, which ensureArena has checked against overflow.
// It only grows.
func (m *Model) ensureLogits(rows int) error {
	n := rows * logitsStride(m.Cfg.Vocab)
	if len(m.a.logits) >= n {
		return nil
	}
	if rows > m.a.maxB*m.Cfg.SeqLen {
		return fmt.Errorf("model: %d rows of logits for an arena of %d sequences of %d tokens", rows, m.a.maxB, m.Cfg.SeqLen)
	}
	m.a.logits = nil // release the old buffer before allocating the new one
	m.a.logits = kernels.MakeBuffer(n)
	return nil
}

// ---------------------------------------------------------------- passes

func (m *Model) checkBatch(b *Batch, needTargets bool) error {
	if b == nil {
		return errors.New("model: nil batch")
	}
	c := m.Cfg
	if b.B <= 0 || b.T <= 0 {
		return fmt.Errorf("model: batch B=%d T=%d must be > 0", b.B, b.T)
	}
	if b.T > c.SeqLen {
		return fmt.Errorf("model: batch T=%d exceeds model.seq_len=%d", b.T, c.SeqLen)
	}
	N := b.B * b.T
	if len(b.Inputs) != N {
		return fmt.Errorf("model: batch Inputs has %d tokens, want B·T=%d", len(b.Inputs), N)
	}
	if needTargets && len(b.Targets) != N {
		return fmt.Errorf("model: batch Targets has %d tokens, want B·T=%d", len(b.Targets), N)
	}
	if b.Mask != nil && len(b.Mask) != N {
		return fmt.Errorf("model: batch Mask has %d entries, want B·T=%d", len(b.Mask), N)
	}
	if b.SegIDs != nil && len(b.SegIDs) != N {
		return fmt.Errorf("model: batch SegIDs has %d entries, want B·T=%d", len(b.SegIDs), N)
	}
	for i, t := range b.Inputs {
		if t < 0 || int(t) >= c.Vocab {
			return fmt.Errorf("model: batch Inputs[%d]=%d outside vocab [0,%d)", i, t, c.Vocab)
		}
	}
	if needTargets {
		for i, t := range b.Targets {
			if int(t) >= c.Vocab {
				return fmt.Errorf("model: batch Targets[%d]=%d outside vocab [0,%d) (negative = ignored)", i, t, c.Vocab)
			}
		}
	}
	return nil
}

// ForwardBackward runs forward and backward on one micro-batch and adds
// scale·∂objective/∂θ into Grads, where the objective is the mean
// cross-entropy over counted positions plus the mean z-loss (λ·lse²) when
// model.z_loss > 0. A position counts when its target is ≥ 0 and its Mask
// weight (default 1) is non-zero; Mask weights the average. Use
// scale = 1/number_of_micro_batches to accumulate.
func (m *Model) ForwardBackward(b *Batch, scale float32) (Stats, error) {
	m.outN = 0
	if err := m.checkBatch(b, true); err != nil {
		return Stats{}, err
	}
	if err := m.ensureArena(b.B); err != nil {
		return Stats{}, err
	}
	if err := m.ensureLogits(min(m.a.maxB*m.Cfg.SeqLen, m.headChunk())); err != nil {
		return Stats{}, err
	}
	t0 := time.Now()
	m.moe.scale = scale
	m.gw = m.startAcc // this pass writes Grads (StartAccumulation)
	m.forwardBody(b, true)
	aux := m.moeAux()
	// the head ends with lm_head gradient GEMMs, whose time (st.BackwardTime)
	// moves to backward: the forward phase then ends where they begin
	st := m.headTrain(b, scale)
	st.MoEAux = aux
	t1 := time.Now()
	m.backward(b)
	m.startAcc, m.gw = false, false
	headBwd := st.BackwardTime
	st.ForwardTime, st.BackwardTime = t1.Sub(t0)-headBwd, time.Since(t1)+headBwd
	return st, nil
}

// Forward is ForwardBackward without gradients (evaluation). It uses the
// same arena, and a later ForwardBackward recomputes everything it needs.
func (m *Model) Forward(b *Batch) (Stats, error) {
	m.outN = 0
	if err := m.checkBatch(b, true); err != nil {
		return Stats{}, err
	}
	if err := m.ensureArena(b.B); err != nil {
		return Stats{}, err
	}
	if err := m.ensureLogits(b.B * b.T); err != nil { // every position's logits, for Outputs
		return Stats{}, err
	}
	t0 := time.Now()
	m.forwardBody(b, true)
	st := m.head(b)
	st.MoEAux = m.moeAux()
	st.ForwardTime = time.Since(t0)
	m.outN = b.B * b.T
	return st, nil
}

// Outputs returns the logits [B·T, vocab] and their logsumexp per position
// computed by the last Forward call (nil after any other call). They alias
// the model's arena: read them before the next call.
func (m *Model) Outputs() (logits, lse []float32) {
	if m.outN == 0 {
		return nil, nil
	}
	return m.a.logits[:m.outN*m.Cfg.Vocab], m.a.lse[:m.outN]
}

// Logits writes into dst (len vocab) the next-token logits after the given
// context (1..seq_len tokens).
func (m *Model) Logits(tokens []int32, dst []float32) error {
	m.outN = 0
	c := m.Cfg
	if len(tokens) == 0 || len(tokens) > c.SeqLen {
		return fmt.Errorf("model: Logits context of %d tokens, want 1..%d", len(tokens), c.SeqLen)
	}
	if len(dst) != c.Vocab {
		return fmt.Errorf("model: Logits dst has length %d, want vocab=%d", len(dst), c.Vocab)
	}
	b := Batch{B: 1, T: len(tokens), Inputs: tokens}
	if err := m.checkBatch(&b, false); err != nil {
		return err
	}
	if err := m.ensureArena(1); err != nil {
		return err
	}
	m.forwardBody(&b, false)
	D := c.DModel
	last := len(tokens) - 1
	x := m.a.resid[c.NLayers][last*D : (last+1)*D]
	ops.RMSNormForward(m.a.lnf, m.a.rstdf, x, m.p.lnf, D, float32(c.NormEps), 0, 1)
	m.prec.Sgemm(false, true, 1, c.Vocab, D, 1, m.a.lnf, D, m.p.lm, D, 0, dst, c.Vocab)
	return nil
}

func (m *Model) ropeLayer(l int) bool {
	k := m.Cfg.NoPEEvery
	return k == 0 || (l+1)%k != 0
}

// forwardBody runs the embedding and every block, filling the arena and
// (with vitals) the attention/residual vitals.
func (m *Model) forwardBody(b *Batch, vitals bool) {
	c := m.Cfg
	a := &m.a
	B, T := b.B, b.T
	N := B * T
	D, H, KV, F, hd := c.DModel, c.NHeads, c.NKVHeads, c.MLPHidden, m.hd
	eps := float32(c.NormEps)
	m.lastB = B

	m.tb(OpEmbedding, -1)
	m.tEmb = embedTask{out: a.resid[0], tokens: b.Inputs, wte: m.p.emb, C: D}
	kernels.ParallelForTask(N, 64, &m.tEmb)
	m.te()

	var seg []int32
	if c.DocMask {
		seg = b.SegIDs
	}
	m.attn = ops.Attention{D: ops.AttnDims{B: B, T: T, H: H, KVH: KV, HD: hd, Stride: m.qkvDim,
		QOff: 0, KOff: H * hd, VOff: (H + KV) * hd, OutStride: m.attDim}, Seg: seg, Scratch: m.a.attnTmp, Prec: m.prec}

	for l := 0; l < c.NLayers; l++ {
		w := &m.p.layers[l]
		x := a.resid[l]
		m.tb(OpAttention, l)
		// residMid starts as a copy of x (o_proj adds into it), made by the norm's pass
		m.rmsForwardCopy(a.ln1[l], a.rstd1[l], x, w.ln1, a.residMid[l], N, D, eps)
		qkv := a.qkv[l]
		m.tb(OpQKVGemm, l)
		var raw, qnRstd, knRstd []float32
		if c.QKNorm {
			raw, qnRstd, knRstd = a.qkvRaw[l], a.qnRstd[l], a.knRstd[l]
			m.prec.MatmulForward(raw, a.ln1[l], w.qkv, N, D, m.qkvDim, false)
		} else {
			m.prec.MatmulForward(qkv, a.ln1[l], w.qkv, N, D, m.qkvDim, false)
		}
		m.te()
		m.qkPrep(&m.tQK, l, qkv, raw, qnRstd, knRstd, N, T, 0)
		m.tb(OpAttnCore, l)
		m.attn.Forward(a.atty[l], a.att[l], qkv, a.rowMax, a.rowEnt)
		m.te()
		if vitals {
			m.attnVitals(l, B, T)
		}
		m.tb(OpOProjGemm, l)
		m.prec.MatmulForward(a.residMid[l], a.atty[l], w.wo, N, m.attDim, D, true)
		m.te()
		m.te() // attention
		m.tb(OpMLP, l)
		out := a.resid[l+1]
		// out starts as a copy of residMid (the MLP adds into it)
		m.rmsForwardCopy(a.ln2[l], a.rstd2[l], a.residMid[l], w.ln2, out, N, D, eps)
		if w.moe != nil {
			m.moeForward(l, N, a.ln2[l], out, vitals)
		} else {
			m.tb(OpGateUpGemm, l)
			m.prec.MatmulForward(a.gu[l], a.ln2[l], w.gu, N, D, 2*F, false)
			m.te()
			m.tSwi = swigluTask{h: a.h[l], sig: a.sig[l], gu: a.gu[l], F: F}
			kernels.ParallelForTask(N, 16, &m.tSwi)
			m.tb(OpDownGemm, l)
			m.prec.MatmulForward(out, a.h[l], w.down, N, F, D, true)
			m.te()
		}
		m.te() // mlp
		if vitals {
			m.residVitals(l, out[:N*D])
		}
	}
}

func (m *Model) rmsForward(out, rstd, inp, w []float32, N, C int, eps float32) {
	m.rmsForwardCopy(out, rstd, inp, w, nil, N, C, eps)
}

// rmsForwardCopy is rmsForward that also copies inp's rows to cp (nil:
// none) in the same parallel pass, while they are in cache: the residual
// stream a GEMM then adds into, without a pass of its own.
func (m *Model) rmsForwardCopy(out, rstd, inp, w, cp []float32, N, C int, eps float32) {
	m.tRMS = rmsFwdTask{out: out, rstd: rstd, inp: inp, w: w, cp: cp, C: C, eps: eps}
	kernels.ParallelForTask(N, 32, &m.tRMS)
}

// rmsBackward adds the input gradient into dinp and the gain gradient into
// dw, summing per-chunk partials in a fixed order.
func (m *Model) rmsBackward(dinp, dw, dout, inp, w, rstd []float32, N, C int) {
	m.tRMSB = rmsBwdTask{dinp: dinp, dout: dout, inp: inp, w: w, rstd: rstd, C: C, N: N, partial: m.a.partial}
	kernels.ParallelForTask(normChunks, 1, &m.tRMSB)
	sumPartials(dw, m.a.partial, C, m.gw)
}

// sumPartials adds the normChunks partials of C floats into dw in chunk
// order, or with write sets dw to their sum (the first partial copied:
// the same sums as adding onto zeros, up to the sign of exact zeros).
func sumPartials(dw, partial []float32, C int, write bool) {
	c0 := 0
	if write {
		copy(dw[:C], partial[:C])
		c0 = 1
	}
	for c := c0; c < normChunks; c++ {
		p := partial[c*C : (c+1)*C]
		for j, v := range p {
			dw[j] += v
		}
	}
}

func (m *Model) attnVitals(l, B, T int) {
	H := m.Cfg.NHeads
	mx, en := m.vit.MaxAttnLogit[l], m.vit.AttnEntropy[l]
	for h := 0; h < H; h++ {
		best := float32(math.Inf(-1))
		var sum float64
		for b := 0; b < B; b++ {
			r0 := (b*H + h) * T
			for _, v := range m.a.rowMax[r0 : r0+T] {
				if v > best {
					best = v
				}
			}
			for _, v := range m.a.rowEnt[r0 : r0+T] {
				sum += float64(v)
			}
		}
		mx[h] = best
		en[h] = float32(sum / float64(B*T))
	}
}

func (m *Model) residVitals(l int, x []float32) {
	// Sums and the outlier count run on normChunks fixed chunks in parallel
	// and are combined in chunk order, so the result does not depend on
	// the thread count.
	t := &m.tVit
	*t = residVitTask{x: x, n: len(x)}
	kernels.ParallelForTask(normChunks, 1, t)
	var s, ss float64
	for c := range normChunks {
		s += t.s[c]
		ss += t.ss[c]
	}
	n := float64(len(x))
	mean := s / n
	m.vit.ResidualRMS[l] = float32(math.Sqrt(ss / n))
	sd := math.Sqrt(math.Max(ss/n-mean*mean, 0))
	t.lo, t.hi, t.count = float32(mean-6*sd), float32(mean+6*sd), true
	kernels.ParallelForTask(normChunks, 1, t)
	cnt := 0
	for _, c := range t.cnt {
		cnt += c
	}
	m.vit.ActivationOutlierRate[l] = float32(float64(cnt) / n)
}

// residVitTask is residVitals' parallel part: per chunk of x, the sum and
// the sum of squares (float64, four interleaved accumulators), or with
// count the number of values outside [lo, hi].
type residVitTask struct {
	x      []float32
	n      int
	count  bool
	lo, hi float32
	s, ss  [normChunks]float64
	cnt    [normChunks]int
}

func (t *residVitTask) Run(s, e int) {
	for c := s; c < e; c++ {
		x := t.x[c*t.n/normChunks : (c+1)*t.n/normChunks]
		if t.count {
			t.cnt[c] = ops.CountOutside(x, t.lo, t.hi)
			continue
		}
		// four interleaved accumulators each (AVX2: one float64 lane each)
		t.s[c], t.ss[c] = ops.SumSquares64(x)
	}
}

// backward propagates from the final norm's output gradient that
// headTrain left in a.dln (the lm_head's own gradient is already added) to
// every parameter.
func (m *Model) backward(b *Batch) {
	c := m.Cfg
	a := &m.a
	B, T := b.B, b.T
	N := B * T
	D, H, KV, F, hd := c.DModel, c.NHeads, c.NKVHeads, c.MLPHidden, m.hd
	L := c.NLayers

	// final norm (lm_head's backward ran fused with the loss head)
	m.tb(opLMHeadBwd, -1)
	clear(a.dresid[:N*D])
	m.rmsBackward(a.dresid, m.g.lnf, a.dln, a.resid[L], m.p.lnf, a.rstdf, N, D)
	m.te()
	m.gradsDone(gradPartHead)

	for l := L - 1; l >= 0; l-- {
		w, g := &m.p.layers[l], &m.g.layers[l]
		// MLP: resid[l+1] = residMid + down(swiglu(gu(ln2)))
		m.tb(opMLPBwd, l)
		if w.moe != nil {
			m.moeBackward(l, a.ln2[l], a.dresid, a.dln)
		} else {
			m.tb(opDownGemmBwd, l)
			m.prec.MatmulBackwardBeta(a.dh, g.down, a.dresid, a.h[l], w.down, N, F, D, false, m.gradBeta())
			m.te()
			m.tSwi = swigluTask{h: a.dh, sig: a.sig[l], gu: a.gu[l], dgu: a.dgu, F: F, back: true}
			kernels.ParallelForTask(N, 16, &m.tSwi)
			m.tb(opGateUpGemmBwd, l)
			m.prec.MatmulBackwardBeta(a.dln, g.gu, a.dgu, a.ln2[l], w.gu, N, D, 2*F, false, m.gradBeta())
			m.te()
		}
		m.rmsBackward(a.dresid, g.ln2, a.dln, a.residMid[l], w.ln2, a.rstd2[l], N, D)
		m.te() // mlp_backward
		// attention: residMid = resid[l] + o_proj(attn(qkv(ln1)))
		m.tb(opAttentionBwd, l)
		m.tb(opOProjGemmBwd, l)
		m.prec.MatmulBackwardBeta(a.datty, g.wo, a.dresid, a.atty[l], w.wo, N, m.attDim, D, false, m.gradBeta())
		m.te()
		m.tb(opAttnCoreBwd, l)
		// RoPE's backward runs inside, per (b, kv-head) group (ops.Attention.RoPECos)
		m.attn.RoPECos, m.attn.RoPESin = nil, nil
		if m.ropeLayer(l) {
			m.attn.RoPECos, m.attn.RoPESin = m.cos, m.sin
		}
		m.attn.Backward(a.dqkv, a.datty, a.qkv[l], a.att[l], a.datt)
		m.te()
		src := a.qkv[l]
		if c.QKNorm {
			src = a.qkvRaw[l]
			m.headNormBackward(a.dqkv, src, a.qnRstd[l], w.qn, g.qn, N, 0, H)
			m.headNormBackward(a.dqkv, src, a.knRstd[l], w.kn, g.kn, N, H*hd, KV)
		}
		m.tb(opQKVGemmBwd, l)
		m.prec.MatmulBackwardBeta(a.dln, g.qkv, a.dqkv, a.ln1[l], w.qkv, N, D, m.qkvDim, false, m.gradBeta())
		m.te()
		m.rmsBackward(a.dresid, g.ln1, a.dln, a.resid[l], w.ln1, a.rstd1[l], N, D)
		m.te() // attention_backward
		m.gradsDone(l)
	}
	m.tb(opEmbeddingBwd, -1)
	if m.gw && !c.Tied { // a scatter: rows of tokens not in the batch get nothing (tied: the lm_head GEMM wrote them)
		clear(m.g.emb)
	}
	ops.EmbeddingBackward(m.g.emb, a.dresid[:N*D], b.Inputs, D)
	m.te()
	m.gradsDone(gradPartEmbed)
}

func (m *Model) headNormBackward(d, src, rstd, w, dw []float32, N, off, nh int) {
	m.tHNB = headNormBwdTask{d: d, src: src, rstd: rstd, w: w, stride: m.qkvDim, off: off, nh: nh, hd: m.hd, N: N, partial: m.a.partial}
	kernels.ParallelForTask(normChunks, 1, &m.tHNB)
	sumPartials(dw, m.a.partial, m.hd, m.gw)
}

// ---------------------------------------------------------------- tasks

type embedTask struct {
	out, wte []float32
	tokens   []int32
	C        int
}

func (t *embedTask) Run(s, e int) { ops.EmbeddingForward(t.out, t.tokens, t.wte, t.C, s, e) }

type rmsFwdTask struct {
	out, rstd, inp, w, cp []float32
	C                     int
	eps                   float32
}

func (t *rmsFwdTask) Run(s, e int) {
	ops.RMSNormForward(t.out, t.rstd, t.inp, t.w, t.C, t.eps, s, e)
	if t.cp != nil {
		copy(t.cp[s*t.C:e*t.C], t.inp[s*t.C:e*t.C])
	}
}

// chunkRows is the row range of chunk c of normChunks over N rows.
func chunkRows(c, N int) (int, int) { return c * N / normChunks, (c + 1) * N / normChunks }

type rmsBwdTask struct {
	dinp, dout, inp, w, rstd, partial []float32
	C, N                              int
}

func (t *rmsBwdTask) Run(s, e int) {
	for c := s; c < e; c++ {
		p := t.partial[c*t.C : (c+1)*t.C]
		clear(p)
		r0, r1 := chunkRows(c, t.N)
		ops.RMSNormBackward(t.dinp, p, t.dout, t.inp, t.w, t.rstd, t.C, r0, r1)
	}
}

// qkPrep runs, in one pass over the N rows of layer l's qkv, what comes
// between the qkv GEMM and attention: with QK-norm, the query and key
// heads normalised from raw (rstds saved) and the value heads copied from
// raw; then RoPE on the query and key heads (NoPE layers: none), row r at
// position p0 + r mod T. Row by row the arithmetic is that of the
// separate ops.
func (m *Model) qkPrep(t *qkPrepTask, l int, qkv, raw, qnRstd, knRstd []float32, N, T, p0 int) {
	c := m.Cfg
	w := &m.p.layers[l]
	*t = qkPrepTask{qkv: qkv, stride: m.qkvDim, h: c.NHeads, kv: c.NKVHeads, hd: m.hd, T: T}
	if c.QKNorm { // raw, qnRstd, knRstd: the layer's buffers (else nil)
		t.raw, t.qnRstd, t.knRstd, t.qn, t.kn, t.eps = raw, qnRstd, knRstd, w.qn, w.kn, float32(c.NormEps)
	}
	if m.ropeLayer(l) {
		half := m.hd / 2
		t.cos, t.sin = m.cos[p0*half:], m.sin[p0*half:]
	}
	if t.raw == nil && t.cos == nil {
		return
	}
	kernels.ParallelForTask(N, 16, t)
}

type qkPrepTask struct {
	qkv, raw, qnRstd, knRstd, qn, kn []float32 // raw nil: no QK-norm
	cos, sin                         []float32 // nil: no RoPE
	stride, h, kv, hd, T             int
	eps                              float32
}

func (t *qkPrepTask) Run(s, e int) {
	H, KV, hd := t.h, t.kv, t.hd
	for n := s; n < e; n++ {
		if t.raw != nil {
			ops.HeadRMSNormForward(t.qkv, t.raw, t.qnRstd, t.qn, t.stride, 0, H, hd, t.eps, n, n+1)
			ops.HeadRMSNormForward(t.qkv, t.raw, t.knRstd, t.kn, t.stride, H*hd, KV, hd, t.eps, n, n+1)
			o := n*t.stride + (H+KV)*hd
			copy(t.qkv[o:o+KV*hd], t.raw[o:o+KV*hd])
		}
		if t.cos != nil {
			ops.RoPEForward(t.qkv, t.cos, t.sin, t.T, t.stride, 0, H+KV, hd, n, n+1)
		}
	}
}

type headNormBwdTask struct {
	d, src, rstd, w, partial []float32
	stride, off, nh, hd, N   int
}

func (t *headNormBwdTask) Run(s, e int) {
	for c := s; c < e; c++ {
		p := t.partial[c*t.hd : (c+1)*t.hd]
		clear(p)
		r0, r1 := chunkRows(c, t.N)
		ops.HeadRMSNormBackward(t.d, t.src, t.rstd, t.w, p, t.stride, t.off, t.nh, t.hd, r0, r1)
	}
}

type swigluTask struct {
	h, sig, gu, dgu []float32
	F               int
	back            bool
}

func (t *swigluTask) Run(s, e int) {
	if t.back {
		ops.SwiGLUBackward(t.dgu, t.h, t.gu, t.sig, t.F, s, e)
	} else {
		ops.SwiGLUForward(t.h, t.sig, t.gu, t.F, s, e)
	}
}

type ceTask struct {
	z, grad, loss, lse []float32
	targets            []int32
	V, ld              int // columns, and row stride of z (0: V)
	lambda             float32
	lossOnly           bool // ops.CrossEntropyLoss: no gradient, z overwritten
}

func (t *ceTask) Run(s, e int) {
	if t.lossOnly {
		ops.CrossEntropyLoss(t.z, t.V, t.targets, t.loss, t.lse, s, e)
		return
	}
	ld := t.ld
	if ld == 0 {
		ld = t.V
	}
	ops.CrossEntropy(t.z, t.V, ld, t.targets, t.grad, t.lambda, t.loss, t.lse, s, e)
}

// SetPrecision sets the arithmetic of every matrix product of the model's
// passes — training, LogProbs and the Decoder: ops.FP32 (the default) or
// ops.BF16, where each product's inputs are rounded to bfloat16 and summed
// in float32. The parameters, gradients, norms, softmax statistics and
// loss stay float32 either way; the MoE router's product stays float32
// (its logits choose the experts).
func (m *Model) SetPrecision(p ops.Precision) { m.prec = p }

// Precision is the arithmetic SetPrecision set.
func (m *Model) Precision() ops.Precision { return m.prec }

// newVitals is the vitals buffers of a model of cfg (per layer and head).
func newVitals(cfg Config) Vitals {
	v := Vitals{MaxAttnLogit: make([][]float32, cfg.NLayers), AttnEntropy: make([][]float32, cfg.NLayers),
		ResidualRMS: make([]float32, cfg.NLayers), ActivationOutlierRate: make([]float32, cfg.NLayers)}
	for l := range v.MaxAttnLogit {
		v.MaxAttnLogit[l] = make([]float32, cfg.NHeads)
		v.AttnEntropy[l] = make([]float32, cfg.NHeads)
	}
	return v
}
