// Package lossfit fits a saturating power law of the loss against tokens,
// L(x) = E + A·(x/X0)^(−α), robustly, to a run's own history, and says
// how uncertain the fit and its projection are. It knows nothing of
// training: internal/train feeds it (tokens, loss) points (Tracker) and
// records what it reads (loss_fit, scaling_law_residual,
// loss_projection_final).
//
// The fit: for each α of a log-spaced grid (then refined by golden-section
// search between the best grid point's neighbours), E and A are a
// weighted linear regression of y on u = (x/X0)^(−α) under Huber's loss
// (iteratively reweighted least squares), with E ≥ 0 and A ≥ 0; the α of
// the smallest Huber objective wins. The residual scale is robust
// (1.4826 × the median absolute standardised residual), so a spike moves
// neither the fit nor its noise band much.
package lossfit

import (
	"errors"
	"fmt"
	"math"
	"sort"
)

// Point is one observation: X tokens, Y loss (nats/token), W its weight
// (the number of steps a binned point averages; 1 for a single step).
type Point struct{ X, Y, W float64 }

// Curve is L(x) = E + A·(x/X0)^(−Alpha).
type Curve struct{ E, A, Alpha, X0 float64 }

// At is the curve's loss at x tokens.
func (c Curve) At(x float64) float64 {
	if c.A == 0 {
		return c.E
	}
	return c.E + c.A*math.Pow(x/c.X0, -c.Alpha)
}

// Fit is a fitted curve and the robust scale of its residuals.
type Fit struct {
	Curve
	// Sigma is the robust scale of a single step's residual (nats/token):
	// a binned point of weight W has residual scale Sigma/√W.
	Sigma float64
	N     int // points fitted (finite, positive X and W)
}

// MinPoints is the fewest points FitCurve fits.
const MinPoints = 8

// MinSpan is the least ratio of the largest to the smallest X FitCurve
// fits: a shorter stretch does not tell a power law from a constant.
const MinSpan = 1.2

// ErrTooFew is returned when there are fewer than MinPoints usable points
// or their X span less than MinSpan.
var ErrTooFew = errors.New("lossfit: too few points to fit")

const (
	huberK     = 1.345 // Huber's constant: 95% efficiency under Gaussian noise
	alphaMin   = 0.01
	alphaMax   = 4.0
	alphaGrid  = 48
	irlsRounds = 6
)

// FitCurve fits L(x) = E + A·(x/X0)^(−α) to pts. Points with a non-finite
// or non-positive X, a non-finite Y, or a non-positive W are left out. A
// flat loss gives A = 0 and E its robust level.
func FitCurve(pts []Point) (Fit, error) {
	return fitNear(pts, 0)
}

// fitNear is FitCurve with the α grid over [hint/3, 3·hint] when hint > 0
// (a refit of nearly the same points, as the jackknife's).
func fitNear(pts []Point, hint float64) (Fit, error) {
	use := make([]Point, 0, len(pts))
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, p := range pts {
		if !(p.X > 0) || math.IsInf(p.X, 0) || math.IsNaN(p.Y) || math.IsInf(p.Y, 0) || !(p.W > 0) || math.IsInf(p.W, 0) {
			continue
		}
		use = append(use, p)
		lo, hi = math.Min(lo, p.X), math.Max(hi, p.X)
	}
	if len(use) < MinPoints || hi < MinSpan*lo {
		return Fit{}, fmt.Errorf("%w: %d usable of %d (need %d), tokens %.4g to %.4g (need a ratio of %.2g)",
			ErrTooFew, len(use), len(pts), MinPoints, lo, hi, MinSpan)
	}
	f := fitter{pts: use, x0: lo, lx: make([]float64, len(use)), u: make([]float64, len(use)), h: make([]float64, len(use))}
	for j, p := range use {
		f.lx[j] = math.Log(p.X / lo)
	}
	f.scale = f.olsScale()
	amin, amax, n := alphaMin, alphaMax, alphaGrid
	if hint > 0 {
		amin, amax, n = math.Max(alphaMin, hint/3), math.Min(alphaMax, hint*3), 13
	}
	step := math.Pow(amax/amin, 1/float64(n-1))
	best, bestObj := amin, math.Inf(1)
	for i := 0; i < n; i++ {
		a := amin * math.Pow(step, float64(i))
		if obj := f.objective(a); obj < bestObj {
			best, bestObj = a, obj
		}
	}
	// Golden-section refinement in log α between the grid neighbours.
	a, b := math.Log(math.Max(amin, best/step)), math.Log(math.Min(amax, best*step))
	g := (math.Sqrt(5) - 1) / 2
	c, d := b-g*(b-a), a+g*(b-a)
	oc, od := f.objective(math.Exp(c)), f.objective(math.Exp(d))
	for i := 0; i < 16; i++ {
		if oc < od {
			b, d, od = d, c, oc
			c = b - g*(b-a)
			oc = f.objective(math.Exp(c))
		} else {
			a, c, oc = c, d, od
			d = a + g*(b-a)
			od = f.objective(math.Exp(d))
		}
	}
	if alpha := math.Exp((a + b) / 2); f.objective(alpha) <= bestObj {
		best = alpha
	}
	cv, _ := f.solve(best)
	return Fit{Curve: cv, Sigma: f.sigma(cv), N: len(use)}, nil
}

// objective is the Huber objective of the best E, A for alpha.
func (f *fitter) objective(alpha float64) float64 {
	_, obj := f.solve(alpha)
	return obj
}

// fitter holds the points and scratch of one FitCurve.
type fitter struct {
	pts   []Point
	x0    float64
	scale float64   // residual scale the Huber objective is measured in
	lx    []float64 // ln(x/x0)
	u, h  []float64 // (x/x0)^(−α); Huber weights
}

// olsScale is the robust residual scale of the best least-squares fit on
// a coarse α grid: one scale for comparing every α's Huber objective.
func (f *fitter) olsScale() float64 {
	best, bestSSE := Curve{}, math.Inf(1)
	for i := 0; i < 12; i++ {
		alpha := alphaMin * math.Pow(alphaMax/alphaMin, float64(i)/11)
		f.setAlpha(alpha)
		c := f.wls(alpha)
		sse := 0.0
		for j, p := range f.pts {
			r := p.Y - c.E - c.A*f.u[j]
			sse += p.W * r * r
		}
		if sse < bestSSE {
			best, bestSSE = c, sse
		}
	}
	if s := f.sigma(best); s > 0 {
		return s
	}
	return 1e-12
}

// solve fits E and A for one α by Huber IRLS and returns the curve and its
// Huber objective.
func (f *fitter) solve(alpha float64) (Curve, float64) {
	f.setAlpha(alpha)
	var c Curve
	for round := 0; round < irlsRounds; round++ {
		c = f.wls(alpha)
		for j, p := range f.pts {
			z := math.Abs(p.Y-c.E-c.A*f.u[j]) * math.Sqrt(p.W) / f.scale
			f.h[j] = 1
			if z > huberK {
				f.h[j] = huberK / z
			}
		}
	}
	obj := 0.0
	for j, p := range f.pts {
		z := math.Abs(p.Y-c.E-c.A*f.u[j]) * math.Sqrt(p.W) / f.scale
		if z <= huberK {
			obj += z * z / 2
		} else {
			obj += huberK * (z - huberK/2)
		}
	}
	return c, obj
}

// setAlpha sets u = (x/x0)^(−α) and resets the Huber weights.
func (f *fitter) setAlpha(alpha float64) {
	for j := range f.u {
		f.u[j], f.h[j] = math.Exp(-alpha*f.lx[j]), 1
	}
}

// wls is the weighted least-squares E, A for the current u and Huber
// weights, with A ≥ 0 and E ≥ 0.
func (f *fitter) wls(alpha float64) Curve {
	var sw, su, sy, suu, suy float64
	for j, p := range f.pts {
		w := p.W * f.h[j]
		u := f.u[j]
		sw += w
		su += w * u
		sy += w * p.Y
		suu += w * u * u
		suy += w * u * p.Y
	}
	c := Curve{Alpha: alpha, X0: f.x0, E: sy / sw}
	det := sw*suu - su*su
	if det <= 1e-12*sw*suu { // u nearly constant: no slope to fit
		return c
	}
	a := (sw*suy - su*sy) / det
	e := (sy - a*su) / sw
	switch {
	case a <= 0: // a rising or flat loss: the level alone
	case e < 0: // no floor below zero: through the origin
		c.E, c.A = 0, suy/suu
	default:
		c.E, c.A = e, a
	}
	return c
}

// sigma is 1.4826 × the median of |residual|·√W: the robust scale of one
// step's residual.
func (f *fitter) sigma(c Curve) float64 {
	z := make([]float64, len(f.pts))
	for j, p := range f.pts {
		z[j] = math.Abs(p.Y-c.At(p.X)) * math.Sqrt(p.W)
	}
	return 1.4826 * median(z)
}

func median(x []float64) float64 {
	if len(x) == 0 {
		return math.NaN()
	}
	s := append([]float64(nil), x...)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
