package optim

import "math"

// NAdamW (optim.name = "nadamw") is Adam with Nesterov momentum (Dozat
// 2016) and decoupled weight decay: PyTorch's torch.optim.NAdam with
// decoupled_weight_decay=True (PyTorch ≥ 2.1; the weight decay of 1.13's
// NAdam is an L2 term added to the gradient, and 1.13 multiplies μ_t twice
// into μ_{t+1}'s product, a bug later fixed: kestrel follows the fixed
// form). With the clipped gradient g, step t (1-based, the bias-correction
// count), ψ = optim.nadam_momentum_decay:
//
//	μ_t = β1·(1 − 0.5·0.96^(t·ψ)),   Π_t = μ_1⋯μ_t
//	m ← β1·m + (1−β1)·g,   v ← β2·v + (1−β2)·g²
//	u = (cg·g + cm·m) / (√v·ib2 + ε) + λ·θ
//	cg = (1 − μ_t)/(1 − Π_t),   cm = μ_{t+1}/(1 − Π_t·μ_{t+1})
//	θ ← θ − η·u
//
// (PyTorch: θ ← θ·(1 − η·λ), then the two addcdiv terms; the same update.)
// The state is AdamW's (M, V, Steps): Π_t is a function of Steps, so a
// checkpoint, a resume and a swap between adamw, nadamw and adamc carry it
// unchanged. The numerator is rounded to float32 and divided in float32,
// as AdamW's m·ib1; the AVX-512 kernels (nadamDirAVX512,
// nadamCommitAVX512) do the same operations in the same order as the Go
// loops below, bit for bit.

// nadamMu is μ_t of the momentum schedule.
func nadamMu(b1, psi float64, t int) float64 {
	return b1 * (1 - 0.5*math.Pow(0.96, float64(t)*psi))
}

// nadamCoeffs returns cg and cm of step t (see above), keeping Π_t for
// the next step; Π_t is recomputed from μ_1 when t is not the step after
// the last one (a resume, a reset), by the same products in the same
// order, so it has the same bits either way.
func (o *AdamW) nadamCoeffs(t int) (cg, cm float64) {
	b1, psi := o.cfg.Beta1, o.cfg.NAdamMomentumDecay
	if o.nadamT != t {
		if o.nadamT == 0 || o.nadamT != t-1 {
			p := 1.0
			for i := 1; i < t; i++ {
				p *= nadamMu(b1, psi, i)
			}
			o.nadamProd = p
		}
		o.nadamProd *= nadamMu(b1, psi, t)
		o.nadamT = t
	}
	mu, next := nadamMu(b1, psi, t), nadamMu(b1, psi, t+1)
	return (1 - mu) / (1 - o.nadamProd), next / (1 - o.nadamProd*next)
}

// nadamU is one element's new moments and NAdamW direction (adamU's
// twin): the numerator cm·m' + cg·g in float64, rounded to float32 and
// divided in float32.
func nadamU(g32, m32, v32, p32 float32, k *adamConsts) (m, v float32, u float64) {
	g := float64(g32) * k.gs
	m = float32(float64(k.b1*float64(m32)) + float64(k.c1*g))
	v = float32(float64(k.b2*float64(v32)) + float64(k.c2*g*g))
	num := float32(float64(k.cm*float64(m)) + float64(k.cg*g))
	u = float64(num/(float32(sqrt32(v)*k.ib2)+k.eps)) + float64(k.wd*float64(p32))
	return m, v, u
}
