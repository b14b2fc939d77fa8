package stepvitals

import (
	"math"

	"github.com/kestrel-lm/kestrel/internal/kernels"
	"github.com/kestrel-lm/kestrel/internal/runlog"
)

// noiseBeta is the EMA factor of the noise-scale estimates (about the last
// 50 steps): McCandlish et al. smooth |G|² and tr(Σ) separately before
// their ratio, since each step's estimate is noisy and may be negative.
const noiseBeta = 0.98

// NoiseScale estimates the gradient noise scale B_simple = tr(Σ)/|G|²
// (McCandlish et al., "An Empirical Model of Large-Batch Training") from
// what gradient accumulation already computes: the gradients of the
// micro-batches of b sequences and of the whole batch of B. With
// E|G_b|² = |G|² + tr(Σ)/b,
//
//	|G|²  ≈ (B·|G_B|² − b·|G_b|²) / (B − b)
//	tr(Σ) ≈ (|G_b|² − |G_B|²) / (1/b − 1/B)
//
// with |G_b|² averaged over the step's micro-batches (b their harmonic mean
// when they differ) and |G_B|² the optimizer's pre-clip gradient norm,
// each smoothed by an EMA before the ratio. No extra backward: pass k adds
// w_k·g_k to the accumulated gradient S, so |w_k·g_k|² = |S_k|² −
// 2·S_k·S_(k−1) + |S_(k−1)|², from S_k, the copy of S_(k−1) kept since the
// pass before, and for the last pass the optimizer's |S|²: with two
// micro-batches one read-and-copy after the first pass and one dot product
// after the second, each pass split by blocks over the kernels' pool.
// Averaging every micro-batch matters:
// late in training |G|² is a small difference of large norms, and with two
// micro-batches the estimate is then the dot product of their gradients.
// A step with a single micro-batch (train.micro_batch ≥ the batch)
// measures nothing: the metric is then absent, never 0. In a data-parallel
// run rank 0 measures its micro-batches before the last (whose pass
// all-reduces the gradient).
type NoiseScale struct {
	prev    []float32 // S_(k−1): the accumulated gradient before the current pass
	prevSq  float64   // |S_(k−1)|²
	sq      float64   // Σ_k |g_k|² over the micro-batches measured this step
	invB    float64   // Σ_k 1/b_k
	n       int       // micro-batches measured this step
	g2, tr  float64   // EMAs of the |G|² and tr(Σ) estimates; NaN before the first
	skipped bool      // this step's gradient was not finite

	// The last pass waits for finish: |S_last|² is the optimizer's
	// gradient norm, so the pass needs only S_last·S_(k−1).
	lastCross float64
	lastW     float64
	lastRows  int // 0 = no last pass pending

	sums blockSums // the passes' block partials, reused from step to step
}

// NewNoiseScale is an estimator with no estimate yet.
func NewNoiseScale() *NoiseScale {
	return &NoiseScale{g2: math.NaN(), tr: math.NaN()}
}

// Begin starts a step. A nil NoiseScale (a data-parallel rank other than
// 0) measures nothing.
func (ns *NoiseScale) Begin() {
	if ns == nil {
		return
	}
	ns.sq, ns.invB, ns.n, ns.prevSq, ns.skipped, ns.lastRows = 0, 0, 0, 0, false, 0
}

// Micro measures pass k of rows sequences, which added w·g_k (w = rows/B)
// to the accumulated grads; last says no pass follows: its S_k is the
// gradient whose norm finish receives, and it is not kept.
func (ns *NoiseScale) Micro(grads []float32, k, rows int, w float64, last bool) {
	if ns == nil || rows <= 0 || w <= 0 || ns.skipped {
		return
	}
	if len(ns.prev) != len(grads) {
		ns.prev = make([]float32, len(grads))
	}
	if k > 0 && last {
		ns.lastCross, ns.lastW, ns.lastRows = ns.dot(grads, ns.prev), w, rows
		return
	}
	var cur, d2 float64
	if k == 0 {
		cur = ns.sqCopy(ns.prev, grads)
		d2 = cur
	} else {
		cross := ns.dot(grads, ns.prev)
		cur = ns.sqCopy(ns.prev, grads)
		d2 = cur - 2*cross + ns.prevSq
	}
	ns.prevSq = cur
	ns.add(d2, w, rows)
}

// Direct counts a gradient measured directly instead of from the
// accumulated one: d2 = |w·g|² of rows sequences whose gradient g was
// scaled by w = rows/B (train.parallel_micro_batches: each replica's
// gradient before the replicas are summed, over the micro-batches that
// replica ran, so rows is theirs together).
func (ns *NoiseScale) Direct(d2, w float64, rows int) {
	if ns == nil || rows <= 0 || w <= 0 || ns.skipped {
		return
	}
	ns.add(d2, w, rows)
}

// add counts one micro-batch whose scaled gradient w·g has |w·g|² = d2.
func (ns *NoiseScale) add(d2, w float64, rows int) {
	if math.IsNaN(d2) || math.IsInf(d2, 0) {
		ns.skipped = true
		return
	}
	ns.sq += math.Max(d2, 0) / (w * w)
	ns.invB += 1 / float64(rows)
	ns.n++
}

// block is the span of float32 partial sums summed in float64, so rounding
// stays at a block's scale.
const block = 4096

// blockGrain is the fewest blocks one thread of the kernels' pool takes:
// a gradient of fewer than 2·blockGrain blocks (128K values) is read on
// the caller's thread.
const blockGrain = 8

// blockSums runs one pass over a gradient in blocks on the kernels' pool:
// each block's float64 partial goes to its own slot of parts, and the
// caller sums the slots in block order, so the total is the one-thread
// sum bit for bit whatever the threads (TestNoiseSumsMatchOneThread).
type blockSums struct {
	dst, src []float32 // sqCopy: src copied into dst; dot: src·dst
	copy     bool
	parts    []float64
}

// Run computes the partials of blocks [start, end).
func (b *blockSums) Run(start, end int) {
	for k := start; k < end; k++ {
		lo, hi := k*block, min((k+1)*block, len(b.src))
		if b.copy {
			b.parts[k] = sqCopyBlock(b.dst[lo:hi], b.src[lo:hi])
		} else {
			b.parts[k] = float64(kernels.Dot(b.src[lo:hi], b.dst[lo:]))
		}
	}
}

// run sums the pass over src in block order.
func (b *blockSums) run(dst, src []float32, copy bool) float64 {
	n := (len(src) + block - 1) / block
	if cap(b.parts) < n {
		b.parts = make([]float64, n)
	}
	b.dst, b.src, b.copy, b.parts = dst, src, copy, b.parts[:n]
	kernels.ParallelForTask(n, blockGrain, b)
	var total float64
	for _, p := range b.parts {
		total += p
	}
	b.dst, b.src = nil, nil // hold no gradient between steps
	return total
}

// sqCopy copies src into dst and returns Σ src² in one pass.
func (ns *NoiseScale) sqCopy(dst, src []float32) float64 { return ns.sums.run(dst, src, true) }

// dot is Σ a·b (b at least as long as a).
func (ns *NoiseScale) dot(a, b []float32) float64 { return ns.sums.run(b, a, false) }

// sqCopyBlock copies src into dst (as long) and returns Σ src²: four
// float32 lanes, summed in float64.
func sqCopyBlock(d, c []float32) float64 {
	var s0, s1, s2, s3 float32
	j := 0
	for ; j+4 <= len(c); j += 4 {
		a0, a1, a2, a3 := c[j], c[j+1], c[j+2], c[j+3]
		d[j], d[j+1], d[j+2], d[j+3] = a0, a1, a2, a3
		s0 += a0 * a0
		s1 += a1 * a1
		s2 += a2 * a2
		s3 += a3 * a3
	}
	for ; j < len(c); j++ {
		d[j] = c[j]
		s0 += c[j] * c[j]
	}
	return float64(s0) + float64(s1) + float64(s2) + float64(s3)
}

// Finish takes the step's full-batch gradient norm (before clipping) over
// B sequences and tokPerSeq tokens each, updates the EMAs and records
// them in m. A step that measured no micro-batch, whose update was
// skipped or whose gradient was not finite records nothing: a stale
// estimate is not this step's.
func (ns *NoiseScale) Finish(gradNorm float64, B int, tokPerSeq float64, skipped bool, m *runlog.Step) {
	if ns == nil || ns.skipped || skipped || B <= 0 || math.IsNaN(gradNorm) || math.IsInf(gradNorm, 0) {
		return
	}
	if ns.lastRows > 0 { // |w·g_last|² = |S|² − 2·S·S_(k−1) + |S_(k−1)|²
		ns.add(gradNorm*gradNorm-2*ns.lastCross+ns.prevSq, ns.lastW, ns.lastRows)
	}
	if ns.n == 0 || ns.skipped {
		return
	}
	b, BB := float64(ns.n)/ns.invB, float64(B) // b: the harmonic mean micro-batch
	if b >= BB {
		return
	}
	small, big := ns.sq/float64(ns.n), gradNorm*gradNorm
	g2 := (BB*big - b*small) / (BB - b)
	tr := (small - big) / (1/b - 1/BB)
	if math.IsNaN(ns.g2) {
		ns.g2, ns.tr = g2, tr
	} else {
		ns.g2 = noiseBeta*ns.g2 + (1-noiseBeta)*g2
		ns.tr = noiseBeta*ns.tr + (1-noiseBeta)*tr
	}
	ns.report(tokPerSeq, m)
}

// report writes the current estimates into m.NoiseScale (nil before the
// first estimate).
func (ns *NoiseScale) report(tokPerSeq float64, m *runlog.Step) {
	if math.IsNaN(ns.g2) {
		return
	}
	r := &runlog.NoiseScale{GradSq: ns.g2, NoiseTrace: ns.tr, BSimple: math.NaN(), BSimpleToks: math.NaN()}
	if ns.g2 > 0 && ns.tr > 0 {
		r.BSimple = ns.tr / ns.g2
		if tokPerSeq > 0 {
			r.BSimpleToks = r.BSimple * tokPerSeq
		}
	}
	m.NoiseScale = r
}

// Restore sets the EMAs from the last step line of a resumed run's
// metrics that carried them (grad_true_sq_norm, grad_noise_trace):
// metrics.jsonl writes floats exactly, so the resumed estimates continue
// the uninterrupted run's.
func (ns *NoiseScale) Restore(g2, tr float64) {
	if !math.IsNaN(g2) && !math.IsNaN(tr) {
		ns.g2, ns.tr = g2, tr
	}
}
