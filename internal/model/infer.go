package model

import (
	"fmt"

	"github.com/kestrel-lm/kestrel/internal/kernels"
	"github.com/kestrel-lm/kestrel/internal/kernels/ops"
)

// The forward-only path (evaluation): the same ops as Forward in the same
// order, but no activation is kept for a backward pass. One block's buffers
// are reused by every layer, the residual stream is updated in place, whole
// sequences run in chunks of about inferRows tokens, and the final norm,
// lm_head and log-softmax run only on the positions that are scored, in
// blocks of up to headLogits/vocab positions (headLogitsPacked/vocab with
// W_lm packed once per call, see headPacked). Per row the arithmetic is
// Forward's up to the logits (bit-identical); the log-sum-exp is the
// training head's (ForwardBackward's), whose vectorised exponential sums in
// another order than Forward's scalar one (see infer_test.go).

// inferRows is the number of tokens a forward-only chunk aims at: a batch
// runs max(1, inferRows/T) sequences at a time, which bounds the scratch
// whatever the batch size (every chunk packs each weight matrix once more,
// so chunks much smaller than this cost time).
var inferRows = 2048

// headLogits bounds the lm_head block of the forward-only path: it holds
// min(chunk rows, max(64, headLogits/vocab)) scored positions (2048 for
// ref7m's vocabulary of 8192, 333 for GPT-2's 50257), 64 MiB of logits.
var headLogits = 1 << 24

// headLogitsPacked is the smaller block (8 MiB of logits: 256 positions at
// vocab 8192, rounded down to whole GEMM row tiles: 252) used when W_lm,
// packed once per LogProbs call (kernels.PackedB), takes no more memory
// than the smaller block saves:
// each block's logits are then still in the L3 cache when the log-softmax
// reads them (twice: the row maximum, then the exponentials), instead of
// a round trip to memory.
var headLogitsPacked = 1 << 21

// headPacked reports whether the forward-only head of c packs W_lm once
// per call and runs in blocks of headLogitsPacked.
func headPacked(c Config) bool {
	return kernels.PackedBSize(c.DModel, c.Vocab) <= headLogits-headLogitsPacked
}

// headRows is the most scored positions one lm_head block holds (0: from
// headLogits; tests set it to exercise the blocking).
var headRows = 0

// inferScratch holds the buffers of one block of the forward-only path for
// up to rows tokens (seqs sequences of at most seq_len), and the head's
// buffers for headN positions. It grows on demand and is kept.
type inferScratch struct {
	rows, seqs int

	x, ln, qkvRaw, qkv, atty, gu, h []float32
	rstd, qnRstd, knRstd            []float32
	attnTmp                         []float32

	hx, hrstd, logits, loss, lse []float32
	headN                        int // rows of the head block
	tgt                          []int32
	pos                          []int
	lmT                          kernels.PackedB // W_lmᵀ for the head blocks, when headPacked

	attn  ops.Attention
	tEmb  embedTask
	tRMS  rmsFwdTask
	tQK   qkPrepTask
	tSwi  swigluTask
	tCE   ceTask
	tHead headGatherTask
}

// ensure sizes the scratch for seqs sequences of seq_len tokens.
func (s *inferScratch) ensure(c Config, seqs int) {
	if seqs <= s.seqs {
		return
	}
	_, attDim, qkvDim := c.dims()
	T, D, H, KV, F, V := c.SeqLen, c.DModel, c.NHeads, c.NKVHeads, c.MLPHidden, c.Vocab
	N := seqs * T
	s.rows, s.seqs = N, seqs
	s.x = kernels.MakeBuffer(N * D)
	s.ln = kernels.MakeBuffer(N * D)
	s.qkv = kernels.MakeBuffer(N * qkvDim)
	if c.QKNorm {
		s.qkvRaw = kernels.MakeBuffer(N * qkvDim)
		s.qnRstd = kernels.MakeBuffer(N * H)
		s.knRstd = kernels.MakeBuffer(N * KV)
	}
	s.atty = kernels.MakeBuffer(N * attDim)
	s.gu = kernels.MakeBuffer(N * 2 * F)
	s.h = kernels.MakeBuffer(N * F)
	s.rstd = kernels.MakeBuffer(N)
	s.attnTmp = kernels.MakeBuffer(seqs * H * T)
	hn := headRows
	if hn <= 0 {
		lim := headLogits
		if headPacked(c) {
			lim = headLogitsPacked
		}
		hn = max(64, lim/V)
		// A block shorter than the chunk takes whole row tiles of the
		// GEMM (256 rows would leave a tile of 4 below 18 of 14): the
		// demo's lm_head blocks ran ~3% faster with 252.
		if mr := kernels.GemmMR(); hn < N && hn >= mr {
			hn = hn / mr * mr
		}
	}
	hn = min(hn, N)
	if hn > s.headN {
		s.headN = hn
		s.hx = kernels.MakeBuffer(hn * D)
		s.hrstd = kernels.MakeBuffer(hn)
		s.logits = kernels.MakeBuffer(hn * V)
		s.loss = kernels.MakeBuffer(hn)
		s.lse = kernels.MakeBuffer(hn)
		s.tgt = make([]int32, hn)
		s.pos = make([]int, hn)
	}
}

// LogProbs runs the forward-only path over b (Inputs, Targets and, with
// model.doc_mask, SegIDs as in Forward; Mask is ignored) and writes into
// dst (len B·T), for every position i with Targets[i] ≥ 0, the natural log
// of the probability of Targets[i] after the prefix; other positions get 0:
//
//	dst_i = z_i,y − log Σ_v exp(z_i,v)   (z = lm_head(rmsnorm(x_L)))
//
// It keeps no activations for a backward pass, computes the final norm,
// lm_head and log-softmax only at scored positions, and leaves the arena
// (Outputs, gradients, vitals) untouched. Steady-state calls allocate
// nothing.
func (m *Model) LogProbs(b *Batch, dst []float32) error {
	if err := m.checkBatch(b, true); err != nil {
		return err
	}
	N := b.B * b.T
	if len(dst) != N {
		return fmt.Errorf("model: LogProbs dst has length %d, want B·T=%d", len(dst), N)
	}
	c := m.Cfg
	if m.moe.active() {
		return m.logProbsForward(b, dst)
	}
	seqs := min(b.B, max(1, inferRows/b.T))
	s := &m.inf
	s.ensure(c, seqs)
	packed := headPacked(c) && m.prec == ops.FP32 // bf16: the lm_head on SgemmBF16
	if packed {
		s.lmT.Pack(true, c.DModel, c.Vocab, m.p.lm, c.DModel) // op(B) = W_lmᵀ [D × V]
	}
	T := b.T
	for b0 := 0; b0 < b.B; b0 += seqs {
		bc := min(seqs, b.B-b0)
		r0, r1 := b0*T, (b0+bc)*T
		var seg []int32
		if c.DocMask && b.SegIDs != nil {
			seg = b.SegIDs[r0:r1]
		}
		m.inferBody(s, b.Inputs[r0:r1], seg, bc, T)
		m.inferHead(s, packed, b.Targets[r0:r1], dst[r0:r1])
	}
	return nil
}

// inferBody runs the embedding and every block over B sequences of T tokens
// and leaves the final residual stream in s.x (rows [0, B·T)).
func (m *Model) inferBody(s *inferScratch, inputs, seg []int32, B, T int) {
	c := m.Cfg
	N := B * T
	D, H, KV, F, hd := c.DModel, c.NHeads, c.NKVHeads, c.MLPHidden, m.hd
	eps := float32(c.NormEps)
	x := s.x[:N*D]

	s.tEmb = embedTask{out: x, tokens: inputs, wte: m.p.emb, C: D}
	kernels.ParallelForTask(N, 64, &s.tEmb)
	s.attn = ops.Attention{D: ops.AttnDims{B: B, T: T, H: H, KVH: KV, HD: hd, Stride: m.qkvDim,
		QOff: 0, KOff: H * hd, VOff: (H + KV) * hd, OutStride: m.attDim}, Seg: seg, Scratch: s.attnTmp, Prec: m.prec}

	for l := 0; l < c.NLayers; l++ {
		w := &m.p.layers[l]
		// x ← x + o_proj(attn(qkv(rmsnorm(x))))
		s.rms(s.ln, x, w.ln1, N, D, eps)
		if c.QKNorm {
			m.prec.MatmulForward(s.qkvRaw, s.ln, w.qkv, N, D, m.qkvDim, false)
		} else {
			m.prec.MatmulForward(s.qkv, s.ln, w.qkv, N, D, m.qkvDim, false)
		}
		m.qkPrep(&s.tQK, l, s.qkv, s.qkvRaw, s.qnRstd, s.knRstd, N, T, 0)
		s.attn.Forward(s.atty, nil, s.qkv, nil, nil) // no probabilities kept, no vitals
		m.prec.MatmulForward(x, s.atty, w.wo, N, m.attDim, D, true)
		// x ← x + down(swiglu(gate_up(rmsnorm(x))))
		s.rms(s.ln, x, w.ln2, N, D, eps)
		m.prec.MatmulForward(s.gu, s.ln, w.gu, N, D, 2*F, false)
		s.tSwi = swigluTask{h: s.h, gu: s.gu, F: F} // σ not kept
		kernels.ParallelForTask(N, 16, &s.tSwi)
		m.prec.MatmulForward(x, s.h, w.down, N, F, D, true)
	}
}

func (s *inferScratch) rms(out, inp, w []float32, N, C int, eps float32) {
	s.tRMS = rmsFwdTask{out: out, rstd: s.rstd, inp: inp, w: w, C: C, eps: eps}
	kernels.ParallelForTask(N, 32, &s.tRMS)
}

// inferHead scores the rows of s.x whose target is ≥ 0, s.headN at a time:
// gather + final RMSNorm, lm_head, then log-softmax at the target
// (CrossEntropy gives loss = lse − z_y; dst = −loss); with packed, the
// lm_head reads W_lmᵀ from s.lmT, packed by the caller.
func (m *Model) inferHead(s *inferScratch, packed bool, targets []int32, dst []float32) {
	c := m.Cfg
	D, V := c.DModel, c.Vocab
	n := 0
	flush := func() {
		if n == 0 {
			return
		}
		s.tHead = headGatherTask{out: s.hx, rstd: s.hrstd, x: s.x, pos: s.pos, w: m.p.lnf, D: D, eps: float32(c.NormEps)}
		kernels.ParallelForTask(n, 32, &s.tHead)
		if packed { // s.lmT holds W_lmᵀ
			kernels.SgemmPackedB(false, n, 1, s.hx, D, &s.lmT, 0, s.logits, V) // logits = hx·W_lmᵀ
		} else {
			m.prec.MatmulForward(s.logits, s.hx, m.p.lm, n, D, V, false)
		}
		// the training head's arithmetic (ForwardBackward's loss bit for
		// bit) without its gradient pass; s.logits is scratch
		s.tCE = ceTask{z: s.logits, V: V, targets: s.tgt, loss: s.loss, lse: s.lse, lossOnly: true}
		kernels.ParallelForTask(n, 8, &s.tCE)
		for j, p := range s.pos[:n] {
			dst[p] = -s.loss[j]
		}
		n = 0
	}
	for i, t := range targets {
		if t < 0 {
			dst[i] = 0
			continue
		}
		s.pos[n], s.tgt[n] = i, t
		n++
		if n == s.headN {
			flush()
		}
	}
	flush()
}

// headGatherTask: out[j] = rmsnorm(x[pos[j]]) · w for the scored rows j.
type headGatherTask struct {
	out, rstd, x, w []float32
	pos             []int
	D               int
	eps             float32
}

func (t *headGatherTask) Run(s, e int) {
	D := t.D
	for j := s; j < e; j++ {
		p := t.pos[j]
		ops.RMSNormForward(t.out[j*D:(j+1)*D], t.rstd[j:j+1], t.x[p*D:(p+1)*D], t.w, D, t.eps, 0, 1)
	}
}

// LossFromLogProbs is the mean cross-entropy over the positions with a
// target ≥ 0, summed in float64 in position order as Stats.Loss is for a
// batch without Mask, so that with LogProbs' output it equals the loss
// ForwardBackward reports bit for bit (Forward's, whose log-sum-exp runs
// the scalar exponential, differs in the last bits); n is the number of
// such positions (Stats.Tokens).
// It returns (0, 0) when no position is scored.
func LossFromLogProbs(lp []float32, targets []int32) (loss float64, n int) {
	var sum float64
	for i, y := range targets {
		if y < 0 {
			continue
		}
		sum += float64(-lp[i])
		n++
	}
	if n == 0 {
		return 0, 0
	}
	return sum / float64(n), n
}

// logProbsForward is LogProbs through Forward and Outputs, for models
// whose blocks the forward-only path does not run (mixture of experts):
// the same values, with the training arena's cost.
func (m *Model) logProbsForward(b *Batch, dst []float32) error {
	if _, err := m.Forward(b); err != nil {
		return err
	}
	logits, lse := m.Outputs()
	V := m.Cfg.Vocab
	for i, t := range b.Targets {
		dst[i] = 0
		if t >= 0 {
			dst[i] = logits[i*V+int(t)] - lse[i]
		}
	}
	return nil
}
