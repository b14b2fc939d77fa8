package lossfit

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

// synth returns n steps of tokens perStep·(start+i) with loss c(x) plus
// Gaussian noise of sd sigma (seeded).
func synth(c Curve, n, start int, perStep, sigma float64, seed uint64) []Point {
	rng := rand.New(rand.NewPCG(seed, 1))
	pts := make([]Point, n)
	for i := range pts {
		x := perStep * float64(start+i)
		pts[i] = Point{X: x, Y: c.At(x) + sigma*rng.NormFloat64(), W: 1}
	}
	return pts
}

func TestFitCurveRecoversKnownCurve(t *testing.T) {
	for _, tc := range []struct {
		name  string
		c     Curve
		sigma float64
		tolE  float64 // on E
		tolP  float64 // on the value at 4× the last x (a projection)
	}{
		{"noiseless", Curve{E: 1.5, A: 2, Alpha: 0.5, X0: 1e4}, 0, 0.01, 0.01},
		{"noisy", Curve{E: 1.5, A: 2, Alpha: 0.5, X0: 1e4}, 0.03, 0.05, 0.03},
		{"steep", Curve{E: 2.2, A: 1.2, Alpha: 1.1, X0: 1e4}, 0.02, 0.03, 0.02},
		{"shallow", Curve{E: 0.8, A: 3, Alpha: 0.25, X0: 1e4}, 0.02, 0.1, 0.03},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pts := synth(tc.c, 400, 10, 1000, tc.sigma, 7)
			f, err := FitCurve(pts)
			if err != nil {
				t.Fatal(err)
			}
			xp := 4 * pts[len(pts)-1].X
			if d := math.Abs(f.At(xp) - tc.c.At(xp)); d > tc.tolP {
				t.Errorf("projection at %g: %.4f, truth %.4f (fit E=%.3f A=%.3f α=%.3f)", xp, f.At(xp), tc.c.At(xp), f.E, f.A*math.Pow(f.X0/tc.c.X0, -f.Alpha), f.Alpha)
			}
			if d := math.Abs(f.E - tc.c.E); d > tc.tolE {
				t.Errorf("E = %.4f, truth %.4f", f.E, tc.c.E)
			}
			if tc.sigma > 0 && math.Abs(f.Sigma-tc.sigma) > 0.25*tc.sigma {
				t.Errorf("Sigma = %.4f, noise sd %.4f", f.Sigma, tc.sigma)
			}
		})
	}
}

// A few spikes (heavy outliers) barely move a Huber fit.
func TestFitCurveRobustToSpikes(t *testing.T) {
	c := Curve{E: 1.5, A: 2, Alpha: 0.5, X0: 1e4}
	pts := synth(c, 400, 10, 1000, 0.02, 3)
	for i := 50; i < len(pts); i += 40 {
		pts[i].Y += 3 // a loss spike
	}
	f, err := FitCurve(pts)
	if err != nil {
		t.Fatal(err)
	}
	xp := 4 * pts[len(pts)-1].X
	if d := math.Abs(f.At(xp) - c.At(xp)); d > 0.05 {
		t.Errorf("projection %.4f, truth %.4f: the spikes pulled the fit", f.At(xp), c.At(xp))
	}
	if f.Sigma > 0.03 {
		t.Errorf("Sigma %.4f: the spikes inflated the noise scale (sd 0.02)", f.Sigma)
	}
}

func TestFitCurveEdges(t *testing.T) {
	flat := make([]Point, 50)
	for i := range flat {
		flat[i] = Point{X: float64(1000 * (i + 1)), Y: 2.5, W: 1}
	}
	f, err := FitCurve(flat)
	if err != nil {
		t.Fatalf("flat: %v", err)
	}
	if math.Abs(f.At(1e9)-2.5) > 1e-9 || math.Abs(f.At(1e3)-2.5) > 1e-9 {
		t.Errorf("flat loss: fit %+v, want the level 2.5 everywhere", f)
	}
	rising := make([]Point, 50)
	for i := range rising {
		rising[i] = Point{X: float64(1000 * (i + 1)), Y: 2 + 0.01*float64(i), W: 1}
	}
	if f, err := FitCurve(rising); err != nil || f.A != 0 {
		t.Errorf("rising loss: fit %+v, %v; want A = 0 (no decreasing law)", f, err)
	}

	few := synth(Curve{E: 1, A: 1, Alpha: 0.5, X0: 1}, MinPoints-1, 1, 10, 0, 1)
	if _, err := FitCurve(few); !errors.Is(err, ErrTooFew) {
		t.Errorf("%d points: err %v, want ErrTooFew", len(few), err)
	}
	short := make([]Point, 20) // 20 points within 10% of tokens
	for i := range short {
		short[i] = Point{X: 1e6 + float64(i)*1e3, Y: 2 - float64(i)*0.01, W: 1}
	}
	if _, err := FitCurve(short); !errors.Is(err, ErrTooFew) {
		t.Errorf("short span: err %v, want ErrTooFew", err)
	}

	c := Curve{E: 1.5, A: 2, Alpha: 0.5, X0: 1e4}
	bad := synth(c, 100, 10, 1000, 0, 1)
	bad[3].Y, bad[7].Y, bad[9].X, bad[11].W = math.NaN(), math.Inf(1), math.NaN(), 0
	f, err = FitCurve(bad)
	if err != nil {
		t.Fatal(err)
	}
	if f.N != 96 || math.IsNaN(f.E) || math.Abs(f.At(1e6)-c.At(1e6)) > 0.01 {
		t.Errorf("NaN/Inf points: fit %+v over %d points; want the 96 good ones fitted", f, f.N)
	}
	nan := make([]Point, 30)
	for i := range nan {
		nan[i] = Point{X: float64(i + 1), Y: math.NaN(), W: 1}
	}
	if _, err := FitCurve(nan); !errors.Is(err, ErrTooFew) {
		t.Errorf("all NaN: err %v, want ErrTooFew", err)
	}
}

func TestJackknifeSE(t *testing.T) {
	c := Curve{E: 1.5, A: 2, Alpha: 0.5, X0: 1e4}
	noisy := synth(c, 300, 10, 1000, 0.05, 5)
	quiet := synth(c, 300, 10, 1000, 0.005, 5)
	xp := 10 * noisy[len(noisy)-1].X
	sn, sq := SE(Jackknife(noisy, 8), xp), SE(Jackknife(quiet, 8), xp)
	if !(sn > 0) || !(sq > 0) || sn < 3*sq {
		t.Errorf("projection SE: noisy %.4g, quiet %.4g; want both > 0 and more noise → larger SE", sn, sq)
	}
	if f, _ := FitCurve(noisy); math.Abs(f.At(xp)-c.At(xp)) > 4*sn+0.01 {
		t.Errorf("projection %.4f vs truth %.4f is outside 4 SE (%.4f)", f.At(xp), c.At(xp), sn)
	}
	if !math.IsNaN(SE(nil, 1)) || Jackknife(noisy[:5], 8) != nil {
		t.Error("too few points or curves must give no SE (NaN), not 0")
	}
}

func BenchmarkFitCurve128(b *testing.B) {
	pts := synth(Curve{E: 1.5, A: 2, Alpha: 0.5, X0: 1e4}, 128, 10, 1000, 0.03, 1)
	for b.Loop() {
		if _, err := FitCurve(pts); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkJackknife128(b *testing.B) {
	pts := synth(Curve{E: 1.5, A: 2, Alpha: 0.5, X0: 1e4}, 128, 10, 1000, 0.03, 1)
	for b.Loop() {
		Jackknife(pts, 8)
	}
}
