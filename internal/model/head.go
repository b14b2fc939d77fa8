package model

import (
	"time"

	"github.com/kestrel-lm/kestrel/internal/kernels"
	"github.com/kestrel-lm/kestrel/internal/kernels/ops"
)

// The loss head: final RMSNorm, lm_head, cross-entropy (+ z-loss), and in
// training the lm_head's backward.
//
// Forward (head) computes the logits of every position into a.logits
// [N × vocab], where Outputs reads them. ForwardBackward (headTrain) holds
// one chunk of them at a time: it runs the head over chunks of about
// headChunkBytes of logits (a multiple of the GEMM's kc rows), and each
// chunk's logits become its dlogits in place and feed the two lm_head
// gradient GEMMs, so the training arena holds at most about
// headChunkBytes of logits however large N·vocab grows.
//
// The chunked head is bit-identical to the whole-batch one: the logits, the
// cross-entropy and dx = dlogits·W are computed row by row, and
// dW += dlogitsᵀ·lnf sums over tokens kc rows at a time with beta = 1,
// so chunks that are multiples of kc keep every sum in its order
// (kernels.GemmKC). With more than one chunk, W_lm is packed for the GEMMs
// once per pass (kernels.PackedB, in both layouts they read) instead of
// once per chunk and GEMM, unless the two copies would outweigh the logits
// saved (headPackedFloats); the packed strips are the ones each GEMM would
// pack itself, so this too is bit-identical.

// headChunkBytes is the default size of one chunk of the training head's
// logits: 256 MiB, more than the logits of any preset's micro-batch (ref7m
// 64 MiB, 30m 64 MiB, 124m 206 MB), which therefore keep one chunk. Smaller
// chunks were measured slower on this project's 2-core machine
// (docs/performance.md): 512-row chunks 2–3% on the ref7m step and 4–11%
// on 124m (without the packed lm_head, which would cost more memory than
// they save there), probably because the memory passes they save cost less
// than the smaller GEMMs, the repacking and the extra pool barriers add. So
// chunking only bounds the memory of larger micro-batches and vocabularies.
// A variable so that tests can make chunks small.
var headChunkBytes = 256 << 20

// headChunk is the number of rows per chunk of the training head: the
// model's headRows, when set, else what headChunkBytes holds, rounded to a
// multiple of the active GEMM's kc (headChunkFor).
func (m *Model) headChunk() int { return headChunkFor(m.headRows, m.Cfg.Vocab) }

// headChunkFor is rows (when > 0, else headChunkBytes of vocab-wide
// logits rows, rounded down) rounded up to a multiple of the active GEMM's
// kc, at least kc.
func headChunkFor(rows, vocab int) int {
	kc := kernels.GemmKC()
	if rows <= 0 {
		rows = max(kc, headChunkBytes/(4*vocab)/kc*kc)
	}
	return (rows + kc - 1) / kc * kc
}

// logitsStride is the row stride (floats) of the training head's logits:
// kernels.PaddedStride(vocab), so that the input-gradient GEMM dln =
// dz·W_lm reads dz in place rather than copying it first (8,192 → 8,208:
// rows 32 KiB apart would share one L1 set). Forward's logits, which
// Outputs hands out, stay dense (row stride vocab).
func logitsStride(vocab int) int { return kernels.PaddedStride(vocab) }

// headPackedFloats is the float32s of the two packed copies of W_lm that
// the training head keeps for a pass of n tokens in chunks of chunk rows:
// none for a single chunk, and none where they would take more memory
// than the chunking saves (2·d_model > n − chunk: a large model on a small
// micro-batch, where W_lm outweighs the logits), which then repacks W_lm
// in each GEMM call as the whole-batch head did once.
func headPackedFloats(c Config, n, chunk int) int {
	if n <= chunk {
		return 0
	}
	packs := kernels.PackedBSize(c.DModel, c.Vocab) + kernels.PackedBSize(c.Vocab, c.DModel)
	if packs > satMul(n-chunk, c.Vocab) {
		return 0
	}
	return packs
}

// head runs the final norm, lm_head and loss of Forward over all N rows,
// leaving the logits in a.logits and their logsumexps in a.lse.
func (m *Model) head(b *Batch) Stats {
	c := m.Cfg
	a := &m.a
	N := b.B * b.T
	D, V := c.DModel, c.Vocab
	m.tb(OpLMHead, -1)
	// lnf = rmsnorm(x_L)·g_f;  logits = lnf·W_lmᵀ   [N × V]
	m.rmsForward(a.lnf, a.rstdf, a.resid[c.NLayers], m.p.lnf, N, D, float32(c.NormEps))
	m.tb(OpLMHeadGemm, -1)
	m.prec.MatmulForward(a.logits, a.lnf, m.p.lm, N, D, V, false)
	m.te()
	m.te() // lm_head
	m.tb(OpCrossEntropy, -1)
	wsum, count := m.rowWeights(b, 0, false)
	// loss_i = lse_i − z_iy, lse_i = log Σ_v exp(z_iv) (no gradient)
	m.tCE = ceTask{z: a.logits, V: V, targets: b.Targets, lambda: float32(c.ZLoss), loss: a.loss, lse: a.lse}
	kernels.ParallelForTask(N, 8, &m.tCE)
	m.te()
	return m.headStats(b, wsum, count)
}

// headTrain is the loss head of ForwardBackward fused with the lm_head's
// backward, over row chunks [r0, r1) of headChunk rows (the last one
// shorter). For each chunk, with z the chunk's rows of a.logits:
//
//	forward:  z = lnf[r0:r1]·W_lmᵀ                               [rows × V]
//	          lse_i = log Σ_v exp(z_iv),  loss_i = lse_i − z_iy
//	backward: z ← dz_iv = k_i·(softmax_iv·(1 + 2λ·lse_i) − [v = y_i])
//	          (k_i = scale·w_i / Σw, λ the z-loss weight; in place)
//	          dln[r0:r1] = dz·W_lm                               [rows × D]
//	          dW_lm     += dzᵀ·lnf[r0:r1]                        [V × D]
//
// It leaves in a.dln the gradient of the final norm's output for every row,
// which backward carries on from, and adds the lm_head gradient into Grads
// (the embedding's, when tied). Spans per chunk: lm_head ⊃ lm_head_gemm,
// cross_entropy, lm_head_backward ⊃ lm_head_gemm_backward (the first
// lm_head span also holds the final norm). The Stats it returns carry the
// time of the lm_head_backward spans as BackwardTime, which
// ForwardBackward moves from the forward pass to the backward one.
func (m *Model) headTrain(b *Batch, scale float32) Stats {
	c := m.Cfg
	a := &m.a
	N := b.B * b.T
	D, V := c.DModel, c.Vocab
	ld := logitsStride(V) // z's row stride
	lambda := float32(c.ZLoss)
	m.tb(OpLMHead, -1)
	// lnf = rmsnorm(x_L)·g_f for all rows (the norm's backward needs them all)
	m.rmsForward(a.lnf, a.rstdf, a.resid[c.NLayers], m.p.lnf, N, D, float32(c.NormEps))
	// k_i = scale·w_i/Σw needs every row's weight before the first chunk
	wsum, count := m.rowWeights(b, scale, true)
	var st Stats
	var bwd time.Duration // in the lm_head_backward spans
	rows := m.headChunk()
	// W_lm packed once for every chunk (kernels.PackedB); bf16 runs the
	// lm_head's products on SgemmBF16 unpacked
	packed := m.prec == ops.FP32 && headPackedFloats(c, N, rows) > 0
	for r0 := 0; r0 < N; r0 += rows {
		r1 := min(N, r0+rows)
		n := r1 - r0
		z := a.logits[:n*ld]
		lnf, dln := a.lnf[r0*D:r1*D], a.dln[r0*D:r1*D]
		if r0 > 0 {
			m.tb(OpLMHead, -1)
		}
		m.tb(OpLMHeadGemm, -1)
		if packed {
			if r0 == 0 {
				a.lmT.Pack(true, D, V, m.p.lm, D) // op(B) = W_lmᵀ [D × V]
			}
			kernels.SgemmPackedB(false, n, 1, lnf, D, &a.lmT, 0, z, ld) // z = lnf·W_lmᵀ
		} else {
			m.prec.MatmulForwardStrided(z, ld, lnf, m.p.lm, n, D, V, false)
		}
		m.te()
		m.te() // lm_head
		m.tb(OpCrossEntropy, -1)
		m.tCE = ceTask{z: z, V: V, ld: ld, targets: b.Targets[r0:r1], grad: a.rowGrad[r0:r1], lambda: lambda,
			loss: a.loss[r0:r1], lse: a.lse[r0:r1]}
		kernels.ParallelForTask(n, 8, &m.tCE)
		m.te()
		if r1 == N { // every row's loss is in: the pass ends with the gradient GEMMs
			st = m.headStats(b, wsum, count)
		}
		tb := time.Now()
		beta := float32(1) // the first chunk of a pass that writes Grads writes dW_lm (gradBeta)
		if r0 == 0 {
			beta = m.gradBeta()
		}
		m.tb(opLMHeadBwd, -1)
		m.tb(opLMHeadGemmBwd, -1)
		if packed {
			if r0 == 0 {
				a.lmN.Pack(false, V, D, m.p.lm, D) // op(B) = W_lm [V × D]
			}
			kernels.SgemmPackedB(false, n, 1, z, ld, &a.lmN, 0, dln, D)            // dln = dz·W_lm
			kernels.Sgemm(true, false, V, D, n, 1, z, ld, lnf, D, beta, m.g.lm, D) // dW_lm += dzᵀ·lnf
		} else {
			m.prec.MatmulBackwardStridedBeta(dln, m.g.lm, z, ld, lnf, m.p.lm, n, D, V, false, beta)
		}
		m.te()
		m.te() // lm_head_backward
		bwd += time.Since(tb)
	}
	st.BackwardTime = bwd
	return st
}

// rowWeights sets a.rowGrad[i] to each row's loss weight w_i (its Mask
// value, default 1; 0 when its target is < 0) and returns Σw and the number
// of rows with w ≠ 0. With grad it then scales the weights to the
// cross-entropy's gradient factors k_i = scale·w_i/Σw (0 when Σw = 0).
func (m *Model) rowWeights(b *Batch, scale float32, grad bool) (wsum float64, count int) {
	rg := m.a.rowGrad
	N := b.B * b.T
	for i := 0; i < N; i++ {
		w := float32(1)
		if b.Mask != nil {
			w = b.Mask[i]
		}
		if b.Targets[i] < 0 {
			w = 0
		}
		if w != 0 {
			count++
		}
		rg[i] = w
		wsum += float64(w)
	}
	if grad {
		k := float32(0)
		if wsum != 0 {
			k = scale / float32(wsum)
		}
		for i := 0; i < N; i++ {
			rg[i] *= k
		}
	}
	return wsum, count
}

// headStats sums the per-row losses and logsumexps the head left in a.loss
// and a.lse into the pass's Stats (mean loss and z-loss over the weighted
// rows) and the LogitLSEMean vital.
func (m *Model) headStats(b *Batch, wsum float64, count int) Stats {
	a := &m.a
	N := b.B * b.T
	var loss, zl, lseSum float64
	for i := 0; i < N; i++ {
		w := 1.0
		if b.Mask != nil {
			w = float64(b.Mask[i])
		}
		if b.Targets[i] < 0 {
			w = 0
		}
		l := float64(a.lse[i])
		loss += w * float64(a.loss[i])
		zl += w * l * l
		lseSum += w * l
	}
	st := Stats{Tokens: count}
	if wsum != 0 {
		st.Loss = loss / wsum
		st.ZLoss = float64(float32(m.Cfg.ZLoss)) * zl / wsum // λ as the cross-entropy used it
		m.vit.LogitLSEMean = float32(lseSum / wsum)
	} else {
		m.vit.LogitLSEMean = 0
	}
	return st
}
