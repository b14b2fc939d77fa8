package lossfit

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
)

// feed runs a Tracker over steps 1..n of perStep tokens each with loss
// c(x) + noise + shift(step); steps before from are neither fitted nor
// judged, cool(step) steps are judged but not fitted.
func feed(tr *Tracker, c Curve, n, from int, sigma float64, shift func(int) float64, cool func(int) bool) []Reading {
	rng := rand.New(rand.NewPCG(11, 2))
	const perStep = 768.0
	out := make([]Reading, n+1)
	for s := 1; s <= n; s++ {
		x := perStep * float64(s)
		y := c.At(x) + sigma*rng.NormFloat64() + shift(s)
		out[s] = tr.Add(x, y, s >= from && !cool(s), s >= from, perStep*float64(n))
	}
	return out
}

func none(int) float64 { return 0 }
func never(int) bool   { return false }

func TestTrackerHealthyRunStaysOnTrack(t *testing.T) {
	c := Curve{E: 1.4, A: 1.5, Alpha: 0.6, X0: 768 * 200}
	tr := NewTracker(TrackerConfig{MaxBins: 32}) // merges several times over 2,000 steps
	rs := feed(tr, c, 2000, 200, 0.04, none, never)
	maxZ, judged := 0.0, 0
	for s, r := range rs[1:] {
		if s+1 < 200 && !math.IsNaN(r.Residual) {
			t.Fatalf("step %d in warm-up has a residual %g", s+1, r.Residual)
		}
		if !math.IsNaN(r.Z) {
			judged++
			maxZ = math.Max(maxZ, math.Abs(r.Z))
		}
	}
	if judged < 1700 || maxZ > 4 {
		t.Errorf("healthy run: %d judged steps, max |z| %.2f; want ≥ 1700 judged and |z| ≤ 4", judged, maxZ)
	}
	last := rs[2000]
	want := c.At(768 * 2000)
	if math.Abs(last.Projection-want) > 0.02 || !(last.ProjectionSE > 0) {
		t.Errorf("projection %.4f ± %.4f, truth %.4f", last.Projection, last.ProjectionSE, want)
	}
	// The projection at a quarter of the run is within 3 SE of the truth.
	q := rs[500]
	if math.IsNaN(q.Projection) || math.Abs(q.Projection-want) > 3*q.ProjectionSE+0.02 {
		t.Errorf("projection at 25%%: %.4f ± %.4f, truth %.4f", q.Projection, q.ProjectionSE, want)
	}
}

// A loss that rises 0.15 above its trend at step 1200 and stays there is
// off track within a window; one noisy step is not.
func TestTrackerOffTrack(t *testing.T) {
	c := Curve{E: 1.4, A: 1.5, Alpha: 0.6, X0: 768 * 200}
	shift := func(s int) float64 {
		switch {
		case s == 800:
			return 2 // one spike
		case s >= 1200:
			return 0.15
		}
		return 0
	}
	rs := feed(NewTracker(TrackerConfig{}), c, 1600, 200, 0.04, shift, never)
	for s := 800; s < 1200; s++ {
		if rs[s].Z > 4 {
			t.Fatalf("step %d: z %.2f after one spike at 800; want ≤ 4", s, rs[s].Z)
		}
	}
	first := 0
	for s := 1200; s <= 1600; s++ {
		if rs[s].Z > 4 {
			first = s
			break
		}
	}
	if first == 0 || first > 1250 {
		t.Errorf("shifted by 0.15 from step 1200: first z > 4 at step %d, want within 50 steps", first)
	}
}

// A cooldown (judged, not fitted) falls below the fit: negative residual,
// and the fit keeps the stable phase's curve.
func TestTrackerCooldownBelowFit(t *testing.T) {
	c := Curve{E: 1.4, A: 1.5, Alpha: 0.6, X0: 768 * 100}
	cool := func(s int) bool { return s > 800 }
	drop := func(s int) float64 {
		if s > 800 {
			return -0.3 * float64(s-800) / 200
		}
		return 0
	}
	tr := NewTracker(TrackerConfig{})
	rs := feed(tr, c, 1000, 100, 0.03, drop, cool)
	if r := rs[1000]; !(r.Z < -4) || !(r.Residual < -0.1) {
		t.Errorf("end of cooldown: residual %.3f z %.2f, want well below the fit", r.Residual, r.Z)
	}
	f, _ := tr.Fit()
	if x := 768.0 * 1000; math.Abs(f.At(x)-c.At(x)) > 0.03 {
		t.Errorf("fit at the end %.4f, stable trend %.4f: the cooldown leaked into the fit", f.At(x), c.At(x))
	}
}

func TestTrackerEdges(t *testing.T) {
	tr := NewTracker(TrackerConfig{})
	r := tr.Add(100, math.NaN(), true, true, 1e6)
	if !math.IsNaN(r.Fit) || !math.IsNaN(r.Residual) || !math.IsNaN(r.Projection) {
		t.Errorf("no fit yet: %+v, want every field NaN", r)
	}
	for s := 1; s <= 30; s++ { // flat loss
		r = tr.Add(float64(100*s), 2, true, true, 1e6)
	}
	if math.Abs(r.Fit-2) > 1e-9 || math.Abs(r.Projection-2) > 1e-9 || math.Abs(r.Residual) > 1e-9 {
		t.Errorf("flat loss: %+v, want fit and projection 2, residual 0", r)
	}
	if r := tr.Add(3100, math.Inf(1), true, true, 1e6); !math.IsNaN(r.Residual) || math.IsNaN(r.Fit) {
		t.Errorf("Inf loss: %+v, want no residual but the fit", r)
	}
	if r := tr.Add(3200, 2, true, true, 0); !math.IsNaN(r.Projection) {
		t.Errorf("no planned end: projection %g, want NaN", r.Projection)
	}
}

// readRun reads a testdata run: "step tokens loss" lines.
func readRun(t *testing.T, name string) (toks, losses []float64) {
	t.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "#") || line == "" {
			continue
		}
		var step int
		var tok, loss float64
		if _, err := fmt.Sscan(line, &step, &tok, &loss); err != nil {
			t.Fatalf("%s: %q: %v", name, line, err)
		}
		toks, losses = append(toks, tok), append(losses, loss)
	}
	return toks, losses
}

// TestTrackerShippedHealthyRuns replays two shipped healthy runs with the
// trainer's phases: configs/shakespeare-char.toml (cosine after 100
// warm-up steps: fitted and judged from step 200) and kestrel demo
// --quick (WSD: fitted from step 40 to the decay at 165, judged to the
// end, through its data stage at 161). The residual stays within its
// noise (off_track quiet), and shakespeare-char's projections made at 25%
// and 50% of the run land near its real final train loss.
func TestTrackerShippedHealthyRuns(t *testing.T) {
	for _, tc := range []struct {
		file          string
		from, decay   int
		checkProjects bool
	}{
		{"testdata/shakespeare_char_loss.txt", 200, 1 << 30, true},
		{"testdata/demo_quick_loss.txt", 40, 165, false},
	} {
		toks, losses := readRun(t, tc.file)
		n := len(toks)
		tr := NewTracker(TrackerConfig{})
		maxZ, judged := 0.0, 0
		proj := map[int]Reading{}
		for i := range toks {
			s := i + 1
			rd := tr.Add(toks[i], losses[i], s >= tc.from && s < tc.decay, s >= tc.from, toks[n-1])
			if !math.IsNaN(rd.Z) {
				maxZ = math.Max(maxZ, rd.Z)
				judged++
			}
			proj[s] = rd
		}
		if maxZ > 3 || judged < n/2 {
			t.Errorf("%s: largest residual z %.2f over %d judged steps; want ≤ 3 (off_track_z is 4) over ≥ %d", tc.file, maxZ, judged, n/2)
		}
		if !tc.checkProjects {
			continue
		}
		final := median(append([]float64(nil), losses[n-50:]...))
		for _, s := range []int{n / 4, n / 2, n} {
			p := proj[s]
			t.Logf("%s: projection at step %d: %.4f ± %.4f; real final train loss %.4f", tc.file, s, p.Projection, p.ProjectionSE, final)
			if math.IsNaN(p.Projection) || math.Abs(p.Projection-final) > 0.05 {
				t.Errorf("projection at step %d: %.4f ± %.4f, real final %.4f", s, p.Projection, p.ProjectionSE, final)
			}
		}
	}
}
