package optim

import (
	"errors"
	"math"
	"slices"
	"testing"
)

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-12*math.Max(1, math.Abs(b)) }

func TestSchedules(t *testing.T) {
	base := DefaultConfig()
	base.LR, base.MinLR, base.Warmup = 1.0, 0.1, 10
	type pt struct {
		step  int
		lr    float64
		phase string
	}
	cases := []struct {
		name  string
		mod   func(*Config)
		total int
		pts   []pt
	}{
		{"cosine", func(c *Config) { c.Schedule = "cosine" }, 110, []pt{
			{0, 1.0 / 11, "warmup"}, {9, 10.0 / 11, "warmup"}, {10, 1, "decay"},
			{60, 0.1 + 0.45*(1+math.Cos(math.Pi*50/99)), "decay"}, {109, 0.1, "decay"}, {500, 0.1, "decay"}}},
		{"constant", func(c *Config) { c.Schedule = "constant" }, 50, []pt{{0, 1.0 / 11, "warmup"}, {10, 1, "constant"}, {49, 1, "constant"}}},
		// 110 steps, 100 after warmup, decay 20% = last 20 steps (90..109).
		{"wsd-linear", func(c *Config) { c.Schedule = "wsd" }, 110, []pt{
			{10, 1, "stable"}, {89, 1, "stable"}, {90, 1 - 0.9/20, "decay"}, {99, 1 - 0.9*10/20, "decay"}, {109, 0.1, "decay"}}},
		{"wsd-1-sqrt", func(c *Config) { c.Schedule, c.DecayShape = "wsd", "1-sqrt" }, 110, []pt{
			{89, 1, "stable"}, {94, 0.1 + 0.9*(1-math.Sqrt(5.0/20)), "decay"}, {109, 0.1, "decay"}}},
		// wsd-s: period 20, last 5 of every period decay.
		{"wsd-s", func(c *Config) { c.Schedule, c.WSDSPeriod, c.WSDSDecaySteps = "wsd-s", 20, 5 }, 100, []pt{
			{10, 1, "stable"}, {24, 1, "stable"}, {25, 1 - 0.9/5, "decay"}, {29, 0.1, "decay"}, {30, 1, "stable"}, {49, 0.1, "decay"}, {50, 1, "stable"}}},
		{"multistep", func(c *Config) { c.Schedule = "multistep" }, 100, []pt{
			{79, 1, "stable"}, {80, 0.316, "step1"}, {89, 0.316, "step1"}, {90, 0.1, "step2"}, {99, 0.1, "step2"}}},
		// Marin 32B: constant then a re-warmup cycle at 60 over 5 steps.
		{"rewarm", func(c *Config) { c.Schedule, c.RewarmAt, c.RewarmSteps = "constant", []int{60}, 5 }, 100, []pt{
			{59, 1, "constant"}, {60, 1.0 / 6, "rewarm"}, {64, 5.0 / 6, "rewarm"}, {65, 1, "constant"}}},
		{"rewarm-wsd", func(c *Config) { c.Schedule, c.RewarmAt, c.RewarmSteps = "wsd", []int{50}, 10 }, 110, []pt{
			// cycle 0: 50 steps, 40 after warmup, decay last 8 (42..49); cycle 1: 60 steps, 50 after rewarm, decay last 10.
			{41, 1, "stable"}, {42, 1 - 0.9/8, "decay"}, {49, 0.1, "decay"}, {50, 1.0 / 11, "rewarm"}, {60, 1, "stable"}, {99, 1, "stable"}, {100, 1 - 0.9/10, "decay"}, {109, 0.1, "decay"}}},
	}
	for _, c := range cases {
		cfg := base
		c.mod(&cfg)
		s, err := NewSchedule(cfg, c.total)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		for _, p := range c.pts {
			got := s.At(p.step)
			if !near(got.LR, p.lr) || got.Phase != p.phase {
				t.Errorf("%s step %d: got %.6g %s, want %.6g %s", c.name, p.step, got.LR, got.Phase, p.lr, p.phase)
			}
		}
	}
}

func TestConfigValidate(t *testing.T) {
	for _, mod := range []func(*Config){
		func(c *Config) { c.Schedule = "linear" },
		func(c *Config) { c.DecayShape = "exp" },
		func(c *Config) { c.MultistepAt = []float64{0.9, 0.8} },
		func(c *Config) { c.MultistepFactors = []float64{0.5} },
		func(c *Config) { c.RewarmAt = []int{10, 5} },
		func(c *Config) { c.DecayKinds = []string{"weights"} },
		func(c *Config) { c.Beta2 = 1 },
		func(c *Config) { c.QKClipTau = -1 },
		func(c *Config) { c.QKClipTau = math.NaN() },
		func(c *Config) { c.QKClipTau = math.Inf(1) },
	} {
		c := DefaultConfig()
		mod(&c)
		if c.Validate() == nil {
			t.Errorf("accepted %+v", c)
		}
	}
	if err := DefaultConfig().Validate(); err != nil {
		t.Error(err)
	}
}

func quietCfg() Config {
	c := DefaultConfig()
	c.ClipUpdateNorm, c.SkipBadSteps, c.MaxGradNorm = false, false, 0
	return c
}

func TestAdamWFirstStepAndGroups(t *testing.T) {
	c := quietCfg()
	c.WeightDecay = 0.5
	spans := []Span{{Name: "w", Offset: 0, Size: 2, Kind: "matrix"}, {Name: "g", Offset: 2, Size: 2, Kind: "norm"}}
	o, err := NewAdamW(c, 4, spans)
	if err != nil {
		t.Fatal(err)
	}
	p := []float32{1, -1, 1, 1}
	g := []float32{0.5, -2, 0.25, 0}
	if _, err := o.Step(p, g, 1, 0.1); err != nil {
		t.Fatal(err)
	}
	// First step: m̂/√v̂ = sign(g) (up to ε); decay only on the matrix.
	want := []float64{1 - 0.1*(1+0.5*1), -1 - 0.1*(-1+0.5*-1), 1 - 0.1, 1}
	for i := range want {
		if math.Abs(float64(p[i])-want[i]) > 1e-6 {
			t.Errorf("p[%d]=%v want %v", i, p[i], want[i])
		}
	}
	if o.Steps != 1 {
		t.Errorf("steps %d", o.Steps)
	}
}

// TestResetMoments: after ResetMoments the next step is again a first step
// (m̂/√v̂ = sign(g)), whatever the moments held before.
func TestResetMoments(t *testing.T) {
	o, err := NewAdamW(quietCfg(), 2, []Span{{Name: "w", Offset: 0, Size: 2, Kind: "norm"}})
	if err != nil {
		t.Fatal(err)
	}
	p := []float32{1, 1}
	for _, g := range [][]float32{{3, -1}, {-2, 5}, {1, 1}} {
		if _, err := o.Step(p, g, 1, 0.1); err != nil {
			t.Fatal(err)
		}
	}
	o.ResetMoments()
	if o.Steps != 0 || slices.ContainsFunc(o.M, func(x float32) bool { return x != 0 }) || slices.ContainsFunc(o.V, func(x float32) bool { return x != 0 }) {
		t.Fatalf("after reset: steps %d, m %v, v %v", o.Steps, o.M, o.V)
	}
	before := slices.Clone(p)
	if _, err := o.Step(p, []float32{0.5, -4}, 1, 0.1); err != nil {
		t.Fatal(err)
	}
	for i, d := range []float64{-0.1, 0.1} {
		if got := float64(p[i] - before[i]); math.Abs(got-d) > 1e-6 {
			t.Errorf("p[%d] moved %g, want %g (a first step)", i, got, d)
		}
	}
}

func TestGradClip(t *testing.T) {
	c := quietCfg()
	c.MaxGradNorm = 1
	o, _ := NewAdamW(c, 2, []Span{{Name: "w", Size: 2, Kind: "matrix"}})
	r, _ := o.Step([]float32{0, 0}, []float32{3, 4}, 1, 0.1)
	if !r.GradClipped || r.GradNorm != 5 {
		t.Errorf("%+v", r)
	}
	// m = 0.1·g·(1/5): the moment saw the clipped gradient.
	if math.Abs(float64(o.M[0])-0.1*3/5) > 1e-6 {
		t.Errorf("m %v", o.M)
	}
}

func TestUpdateClipPlantedOutlier(t *testing.T) {
	c := quietCfg()
	c.ClipUpdateNorm, c.UpdateWindow, c.UpdateMinSteps, c.WeightDecay = true, 16, 8, 0
	c.Beta1, c.Beta2 = 0, 0 // update = sign(g)·|g|/(|g|+ε): norm ≈ √n for any g; use decay to vary it
	c.WeightDecay = 1
	spans := []Span{{Name: "w", Size: 4, Kind: "matrix"}}
	o, _ := NewAdamW(c, 4, spans)
	p := make([]float32, 4)
	g := []float32{1, 1, 1, 1}
	for i := 0; i < 10; i++ {
		// Params stay near 0 so the update norm stays ≈ 2 with a tiny spread.
		for j := range p {
			p[j] = float32(i%2) * 0.01
		}
		r, err := o.Step(p, g, 1, 1e-3)
		if err != nil || r.UpdateClipped {
			t.Fatalf("step %d: %+v %v", i, r, err)
		}
	}
	// Plant an outlier: huge weights make the decay term dominate.
	for j := range p {
		p[j] = 100
	}
	r, err := o.Step(p, g, 1, 1e-3)
	if err != nil {
		t.Fatal(err)
	}
	if !r.UpdateClipped || !(r.UpdateNormPost < r.UpdateNorm) || math.Abs(r.UpdateNormPost-r.UpdateClipAt) > 1e-9 {
		t.Errorf("outlier not clipped to threshold: %+v", r)
	}
	if o.UpdateNorms.Vals[o.UpdateNorms.Len()-1] != r.UpdateNorm {
		t.Errorf("window should record the unclipped norm")
	}
}

func TestSkipStepLeavesStateUntouched(t *testing.T) {
	c := quietCfg()
	c.SkipBadSteps, c.SkipWindow, c.SkipMinSteps = true, 16, 8
	o, _ := NewAdamW(c, 3, []Span{{Name: "w", Size: 3, Kind: "matrix"}})
	p := []float32{1, 2, 3}
	for i := 0; i < 8; i++ {
		g := []float32{0.1, -0.1, 0.1 + 0.01*float32(i%3)}
		if r, err := o.Step(p, g, 2+0.01*float64(i%3), 1e-2); err != nil || r.Skipped {
			t.Fatalf("step %d skipped: %+v %v", i, r, err)
		}
	}
	p0, m0, v0, s0 := slices.Clone(p), slices.Clone(o.M), slices.Clone(o.V), o.Steps
	// Planted loss spike.
	r, err := o.Step(p, []float32{0.1, -0.1, 0.1}, 50, 1e-2)
	if err != nil || !r.Skipped {
		t.Fatalf("loss spike not skipped: %+v %v", r, err)
	}
	// Planted grad-norm spike.
	r, err = o.Step(p, []float32{100, -100, 100}, 2, 1e-2)
	if err != nil || !r.Skipped {
		t.Fatalf("grad spike not skipped: %+v %v", r, err)
	}
	if !slices.Equal(p, p0) || !slices.Equal(o.M, m0) || !slices.Equal(o.V, v0) || o.Steps != s0 {
		t.Errorf("skipped steps changed state")
	}
	// A normal step goes through again.
	if r, _ := o.Step(p, []float32{0.1, -0.1, 0.1}, 2, 1e-2); r.Skipped {
		t.Errorf("normal step skipped: %s", r.SkipReason)
	}
}

func TestNonFiniteRefused(t *testing.T) {
	c := DefaultConfig()
	o, _ := NewAdamW(c, 2, []Span{{Name: "w", Size: 2, Kind: "matrix"}})
	p := []float32{1, 1}
	for _, tc := range []struct {
		g    []float32
		loss float64
	}{{[]float32{float32(math.NaN()), 0}, 1}, {[]float32{float32(math.Inf(1)), 0}, 1}, {[]float32{1, 1}, math.NaN()}, {[]float32{1, 1}, math.Inf(-1)}} {
		if _, err := o.Step(p, tc.g, tc.loss, 0.1); !errors.Is(err, ErrNonFinite) {
			t.Errorf("want ErrNonFinite, got %v", err)
		}
	}
	if p[0] != 1 || p[1] != 1 || o.Steps != 0 || o.M[0] != 0 || o.Losses.Len() != 0 {
		t.Errorf("state changed by refused steps")
	}
}

func TestEMA(t *testing.T) {
	e := NewEMA(0.5, []float32{0, 4})
	e.Update([]float32{2, 0})
	e.Update([]float32{2, 0})
	if e.W[0] != 1.5 || e.W[1] != 1 {
		t.Errorf("ema %v", e.W)
	}
}

// TestEMAParallelMatchesSerial: the parallel update of a large buffer is
// bit-identical to the element-wise formula.
func TestEMAParallelMatchesSerial(t *testing.T) {
	const n = 1<<17 + 3
	w0, p := make([]float32, n), make([]float32, n)
	for i := range w0 {
		w0[i], p[i] = float32(i%101)*0.013, float32(i%37)*-0.021
	}
	b := 0.995
	e := NewEMA(b, w0)
	e.Update(p)
	for i := range w0 {
		if want := float32(b*float64(w0[i]) + (1-b)*float64(p[i])); e.W[i] != want {
			t.Fatalf("W[%d] = %v, want %v", i, e.W[i], want)
		}
	}
}

func TestWindow(t *testing.T) {
	w := NewWindow(3)
	for _, v := range []float64{1, 2, 3, 4} {
		w.Push(v)
	}
	m, s := w.MeanStd()
	if !slices.Equal(w.Vals, []float64{2, 3, 4}) || m != 3 || !near(s, math.Sqrt(2.0/3)) {
		t.Errorf("%v %g %g", w.Vals, m, s)
	}
	if _, ok := w.Threshold(2, 4); ok {
		t.Error("active below min")
	}
}

// TestStateBuffers: the memory estimate's buffer count covers what a step
// allocates (M, V, and storing: m2, v2, u), at the edges of storeMaxParams.
func TestStateBuffers(t *testing.T) {
	for _, tc := range []struct{ n, want int }{{1, 5}, {storeMaxParams, 5}, {storeMaxParams + 1, 3}} {
		if got := StateBuffers(tc.n); got != tc.want {
			t.Errorf("StateBuffers(%d) = %d, want %d", tc.n, got, tc.want)
		}
	}
	const n = 100
	o, err := NewAdamW(DefaultConfig(), n, []Span{{Name: "w", Size: n, Kind: "matrix"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := o.Step(make([]float32, n), make([]float32, n), 1, 1e-3); err != nil {
		t.Fatal(err)
	}
	held := 0
	for _, b := range [][]float32{o.M, o.V, o.m2, o.v2, o.u} {
		if len(b) == n {
			held++
		}
	}
	if held > StateBuffers(n) || useAVX512 && held != 5 {
		t.Errorf("%d buffers of %d parameters held, StateBuffers says %d", held, n, StateBuffers(n))
	}
}
