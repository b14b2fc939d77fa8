package train

import (
	"math"

	"github.com/kestrel-lm/kestrel/internal/kernels"
	"github.com/kestrel-lm/kestrel/internal/runlog"
)

// noiseBeta is the EMA factor of the noise-scale estimates (about the last
// 50 steps): McCandlish et al. smooth |G|² and tr(Σ) separately before
// their ratio, since each step's estimate is noisy and may be negative.
const noiseBeta = 0.98

// noiseScale estimates the gradient noise scale B_simple = tr(Σ)/|G|²
// (McCandlish et al., "An Empirical Model of Large-Batch Training") from
// what gradient accumulation already computes: the gradient of a
// micro-batch of b sequences and of the whole batch of B. With
// E|G_b|² = |G|² + tr(Σ)/b,
//
//	|G|²  ≈ (B·|G_B|² − b·|G_b|²) / (B − b)
//	tr(Σ) ≈ (|G_b|² − |G_B|²) / (1/b − 1/B)
//
// each smoothed by an EMA before the ratio. No extra backward and no copy
// of the gradient: after a step's first pass the accumulated gradient is
// that micro-batch's (scaled by b/B), so one read-only pass gives |G_b|²;
// |G_B|² is the optimizer's pre-clip gradient norm. One micro-batch per
// step is an unbiased sample of E|G_b|²; the EMA averages over steps. A
// step with a single micro-batch (train.micro_batch ≥ the batch) measures
// nothing: the metric is then absent, never 0. In a data-parallel run rank
// 0 measures its first micro-batch when it has two or more (the last pass
// all-reduces the gradient).
type noiseScale struct {
	sq      float64 // |G_b|² of the micro-batch measured this step
	b       int     // its rows; 0 = none measured this step
	g2, tr  float64 // EMAs of the |G|² and tr(Σ) estimates; NaN before the first
	skipped bool    // this step's gradient was not finite
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
	ns.sq, ns.b, ns.skipped = 0, 0, false
}

// first measures the step's first micro-batch of rows sequences, which
// added w·g to the zeroed grads (w = rows/B): |g|² = |grads|²/w².
func (ns *noiseScale) first(grads []float32, rows int, w float64) {
	if ns == nil || rows <= 0 || w <= 0 {
		return
	}
	d2 := sumSquares(grads)
	if math.IsNaN(d2) || math.IsInf(d2, 0) {
		ns.skipped = true
		return
	}
	ns.sq, ns.b = d2/(w*w), rows
}

// sumSquares is Σ x² in float64, from float32 dot products over blocks
// (kernels.Dot) so that rounding stays at the block's scale.
func sumSquares(x []float32) float64 {
	const block = 4096
	var s float64
	for i := 0; i < len(x); i += block {
		c := x[i:min(i+block, len(x))]
		s += float64(kernels.Dot(c, c))
	}
	return s
}

// finish takes the step's full-batch gradient norm (before clipping) over
// B sequences and tokPerSeq tokens each, updates the EMAs and records
// them in m. A step that measured no micro-batch, whose update was
// skipped or whose gradient was not finite records nothing: a stale
// estimate is not this step's.
func (ns *noiseScale) finish(gradNorm float64, B int, tokPerSeq float64, skipped bool, m *runlog.Step) {
	if ns == nil || ns.b == 0 || ns.skipped || skipped || B <= 0 || math.IsNaN(gradNorm) || math.IsInf(gradNorm, 0) {
		return
	}
	b, BB := float64(ns.b), float64(B)
	if b >= BB {
		return
	}
	small, big := ns.sq, gradNorm*gradNorm
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
