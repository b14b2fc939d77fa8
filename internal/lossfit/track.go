package lossfit

import (
	"math"
)

// Jackknife fits pts (in X order) once per block of a block jackknife:
// the points cut into blocks contiguous blocks, each left out in turn.
// It returns the refits that succeeded (fewer than 2: nil).
func Jackknife(pts []Point, blocks int) []Curve {
	full, err := FitCurve(pts)
	if err != nil {
		return nil
	}
	return jackknife(pts, blocks, full.Alpha)
}

// jackknife is Jackknife given the full fit's α (the hint of each refit).
func jackknife(pts []Point, blocks int, alpha float64) []Curve {
	if blocks < 2 || len(pts) < blocks {
		return nil
	}
	out := make([]Curve, 0, blocks)
	rest := make([]Point, 0, len(pts))
	for k := 0; k < blocks; k++ {
		lo, hi := k*len(pts)/blocks, (k+1)*len(pts)/blocks
		rest = append(append(rest[:0], pts[:lo]...), pts[hi:]...)
		if f, err := fitNear(rest, alpha); err == nil {
			out = append(out, f.Curve)
		}
	}
	if len(out) < 2 {
		return nil
	}
	return out
}

// SE is the block-jackknife standard error at x of the curves Jackknife
// returned: √((K−1)/K · Σ (c_k(x) − mean)²); NaN without curves.
func SE(curves []Curve, x float64) float64 {
	k := float64(len(curves))
	if k < 2 {
		return math.NaN()
	}
	mean := 0.0
	for _, c := range curves {
		mean += c.At(x)
	}
	mean /= k
	ss := 0.0
	for _, c := range curves {
		d := c.At(x) - mean
		ss += d * d
	}
	return math.Sqrt((k - 1) / k * ss)
}

// medianEfficiency is √(π/2): the standard error of the median of n
// Gaussian draws is √(π/2)·σ/√n.
var medianEfficiency = math.Sqrt(math.Pi / 2)

// TrackerConfig sizes a Tracker; zero fields take the defaults.
type TrackerConfig struct {
	MaxBins    int // fitted points kept: beyond it adjacent bins merge in pairs (default 128)
	Window     int // judged steps the residual averages (default 50)
	RefitEvery int // fitted steps between refits once a fit exists (default 20)
	Blocks     int // jackknife blocks of the uncertainty (default 8)
	// MinSpan is the least ratio of the last to the first fitted step's
	// tokens before a fit is made (default 1.5): a shorter stretch gives
	// projections too wild to show.
	MinSpan float64
}

func (c TrackerConfig) withDefaults() TrackerConfig {
	if c.MaxBins < 2*MinPoints {
		c.MaxBins = 128
	}
	if c.Window <= 0 {
		c.Window = 50
	}
	if c.RefitEvery <= 0 {
		c.RefitEvery = 20
	}
	if c.Blocks < 2 {
		c.Blocks = 8
	}
	if c.MinSpan < MinSpan {
		c.MinSpan = 1.5
	}
	return c
}

// Reading is what a Tracker says of one step. NaN = not known (left out
// of the metrics, never 0).
type Reading struct {
	Fit          float64 // the fit at this step's tokens
	Residual     float64 // median of loss − fit over the last Window judged steps (a spike does not move it)
	Z            float64 // Residual ÷ its noise (the steps' scatter and the fit's own uncertainty)
	Projection   float64 // the fit at the planned end's tokens
	ProjectionSE float64 // its block-jackknife standard error
}

// Tracker fits a run's loss against tokens as the run goes. The fitted
// steps are kept in at most MaxBins bins of equal step counts (adjacent
// bins merge when they fill up), so the cost of a refit stays bounded. A
// Tracker is a pure function of the sequence of Add calls: replaying a
// run's history rebuilds it exactly (a resume).
type Tracker struct {
	cfg    TrackerConfig
	bins   []Point // closed bins: mean X, mean Y, W steps
	open   Point   // the bin being filled: sums of X and Y, W steps
	width  float64 // steps per closed bin
	fitted int     // fitted steps so far
	firstX float64 // tokens of the first fitted step
	fit    *Fit
	jack   []Curve
	window []Point // the last Window judged steps (tokens, loss)
}

// NewTracker returns an empty Tracker.
func NewTracker(cfg TrackerConfig) *Tracker {
	return &Tracker{cfg: cfg.withDefaults(), width: 1}
}

// Fit returns the latest fit, if any.
func (t *Tracker) Fit() (Fit, bool) {
	if t.fit == nil {
		return Fit{}, false
	}
	return *t.fit, true
}

// Add takes one step: x tokens seen, y its loss. fit says whether the
// step joins the fitted points (the stable phase), judge whether its
// residual counts (not while the loss legitimately leaves the trend:
// warm-up, re-warm-up), xEnd the planned end's tokens (≤ 0: no
// projection). A step with a non-finite x or y is neither fitted nor
// judged.
func (t *Tracker) Add(x, y float64, fit, judge bool, xEnd float64) Reading {
	r := Reading{Fit: math.NaN(), Residual: math.NaN(), Z: math.NaN(), Projection: math.NaN(), ProjectionSE: math.NaN()}
	ok := x > 0 && !math.IsInf(x, 0) && !math.IsNaN(y) && !math.IsInf(y, 0)
	if ok && fit {
		t.addFitted(x, y)
	}
	if ok && judge {
		t.window = append(t.window, Point{X: x, Y: y, W: 1})
		if len(t.window) > t.cfg.Window {
			t.window = t.window[len(t.window)-t.cfg.Window:]
		}
	}
	if t.fit == nil {
		return r
	}
	if x > 0 && !math.IsInf(x, 0) {
		r.Fit = t.fit.At(x)
	}
	if xEnd > 0 {
		r.Projection, r.ProjectionSE = t.fit.At(xEnd), SE(t.jack, xEnd)
	}
	if ok && judge && len(t.window) >= min(t.cfg.Window, 10) {
		res := make([]float64, len(t.window))
		for i, p := range t.window {
			res[i] = p.Y - t.fit.At(p.X)
		}
		n := float64(len(t.window))
		r.Residual = median(res)
		sm := medianEfficiency * t.fit.Sigma // a median's standard error is √(π/2) σ/√n
		noise := sm * sm / n
		if se := SE(t.jack, x); !math.IsNaN(se) {
			noise += se * se
		}
		if noise > 0 {
			r.Z = r.Residual / math.Sqrt(noise)
		}
	}
	return r
}

func (t *Tracker) addFitted(x, y float64) {
	if t.fitted == 0 {
		t.firstX = x
	}
	t.open.X += x
	t.open.Y += y
	t.open.W++
	if t.open.W >= t.width {
		t.bins = append(t.bins, Point{X: t.open.X / t.open.W, Y: t.open.Y / t.open.W, W: t.open.W})
		t.open = Point{}
		if len(t.bins) >= t.cfg.MaxBins {
			t.merge()
		}
	}
	t.fitted++
	if t.fit == nil || t.fitted%t.cfg.RefitEvery == 0 {
		t.refit()
	}
}

// merge halves the bins: each adjacent pair becomes one.
func (t *Tracker) merge() {
	out := t.bins[:0]
	for i := 0; i+1 < len(t.bins); i += 2 {
		a, b := t.bins[i], t.bins[i+1]
		w := a.W + b.W
		out = append(out, Point{X: (a.X*a.W + b.X*b.W) / w, Y: (a.Y*a.W + b.Y*b.W) / w, W: w})
	}
	if len(t.bins)%2 == 1 { // an odd last bin stays as it is
		out = append(out, t.bins[len(t.bins)-1])
	}
	t.bins = out
	t.width *= 2
}

// points are the fitted bins, the open one included, in X order.
func (t *Tracker) points() []Point {
	pts := append([]Point(nil), t.bins...)
	if t.open.W > 0 {
		pts = append(pts, Point{X: t.open.X / t.open.W, Y: t.open.Y / t.open.W, W: t.open.W})
	}
	return pts
}

func (t *Tracker) refit() {
	pts := t.points()
	if len(pts) == 0 || pts[len(pts)-1].X < t.cfg.MinSpan*t.firstX {
		return
	}
	f, err := FitCurve(pts)
	if err != nil {
		return // too few points yet: keep the previous fit, if any
	}
	t.fit = &f
	t.jack = jackknife(pts, t.cfg.Blocks, f.Alpha) // f is the full fit: not again
}
