package train

import (
	"math"

	"github.com/kestrel-lm/kestrel/internal/runlog"
)

// noiseBeta is the EMA factor of the noise-scale estimates (about the last
// 50 steps): McCandlish et al. smooth |G|² and tr(Σ) separately before
// their ratio, since each step's estimate is noisy and may be negative.
const noiseBeta = 0.98

// noiseScale estimates the gradient noise scale B_simple = tr(Σ)/|G|²
// (McCandlish et al., "An Empirical Model of Large-Batch Training") from
// what gradient accumulation already computes: the gradient of each
// micro-batch of b sequences and of the whole batch of B. With
// E|G_b|² = |G|² + tr(Σ)/b,
//
//	|G|²  ≈ (B·|G_B|² − b·|G_b|²) / (B − b)
//	tr(Σ) ≈ (|G_b|² − |G_B|²) / (1/b − 1/B)
//
// averaged over the step's micro-batches (b their harmonic mean when they
// differ), each smoothed by an EMA. No extra backward pass: a micro-batch's
// gradient is the accumulated gradient's increase over its pass, one
// streaming pass over the gradient per micro-batch. A step with a single
// micro-batch (train.micro_batch ≥ the batch) measures nothing: the metric
// is then absent, never 0. In a data-parallel run rank 0 measures its
// micro-batches before the last (whose pass all-reduces the gradient).
type noiseScale struct {
	prev    []float32 // the accumulated gradient before the current pass
	sq      float64   // Σ |g_k|² over the micro-batches measured this step
	invB    float64   // Σ 1/b_k
	n       int       // micro-batches measured this step
	g2, tr  float64   // EMAs of the |G|² and tr(Σ) estimates; NaN before the first
	skipped bool      // this step's gradient was not finite
}

func newNoiseScale() *noiseScale {
	return &noiseScale{g2: math.NaN(), tr: math.NaN()}
}

// begin starts a step. A nil noiseScale (a data-parallel rank other than
// 0) measures nothing.
func (ns *noiseScale) begin() {
	if ns == nil {
		return
	}
	ns.sq, ns.invB, ns.n, ns.skipped = 0, 0, 0, false
}

// micro measures micro-batch k of rows sequences, which added w·g_k to
// grads (w = rows/B); last says it is the step's last pass (its gradient
// is not kept for a next one).
func (ns *noiseScale) micro(grads []float32, k, rows int, w float64, last bool) {
	if ns == nil || rows <= 0 || w <= 0 {
		return
	}
	if len(ns.prev) != len(grads) {
		ns.prev = make([]float32, len(grads))
	}
	var d2 float64
	if k == 0 { // nothing accumulated before the first pass
		for i, g := range grads {
			d2 += float64(g) * float64(g)
			if !last {
				ns.prev[i] = g
			}
		}
	} else {
		for i, g := range grads {
			d := float64(g) - float64(ns.prev[i])
			d2 += d * d
			ns.prev[i] = g
		}
	}
	if math.IsNaN(d2) || math.IsInf(d2, 0) {
		ns.skipped = true
		return
	}
	ns.sq += d2 / (w * w)
	ns.invB += 1 / float64(rows)
	ns.n++
}

// finish takes the step's full-batch gradient norm (before clipping) over
// B sequences and tokPerSeq tokens each, updates the EMAs and records
// them in m. A step that measured no micro-batch, whose update was
// skipped or whose gradient was not finite records nothing: a stale
// estimate is not this step's.
func (ns *noiseScale) finish(gradNorm float64, B int, tokPerSeq float64, skipped bool, m *runlog.Step) {
	if ns == nil || ns.n == 0 || ns.skipped || skipped || B <= 0 || math.IsNaN(gradNorm) || math.IsInf(gradNorm, 0) {
		return
	}
	b := float64(ns.n) / ns.invB // harmonic mean micro-batch size
	BB := float64(B)
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
func (ns *noiseScale) report(tokPerSeq float64, m *runlog.Step) {
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

// restore sets the EMAs from the last step line of a resumed run's
// metrics that carried them (grad_true_sq_norm, grad_noise_trace):
// metrics.jsonl writes floats exactly, so the resumed estimates continue
// the uninterrupted run's.
func (ns *noiseScale) restore(g2, tr float64) {
	if !math.IsNaN(g2) && !math.IsNaN(tr) {
		ns.g2, ns.tr = g2, tr
	}
}
