package optim

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// quintic5 is five steps of σ ↦ a·σ + b·σ³ + c·σ⁵ in float64: what
// Newton–Schulz does to each singular value of the normalised input.
func quintic5(x float64, steps int) float64 {
	for range steps {
		x = nsA*x + nsB*x*x*x + nsC*x*x*x*x*x
	}
	return x
}

// orthonormal returns k orthonormal vectors of length n (Gram–Schmidt on
// seeded Gaussian vectors).
func orthonormal(rng *rand.Rand, n, k int) [][]float64 {
	var out [][]float64
	for len(out) < k {
		v := make([]float64, n)
		for i := range v {
			v[i] = rng.NormFloat64()
		}
		for _, u := range out {
			var d float64
			for i := range v {
				d += v[i] * u[i]
			}
			for i := range v {
				v[i] -= d * u[i]
			}
		}
		var s float64
		for _, x := range v {
			s += x * x
		}
		for i := range v {
			v[i] /= math.Sqrt(s)
		}
		out = append(out, v)
	}
	return out
}

// TestNewtonSchulzSingularValues builds G = Σ σₖ·uₖ·vₖᵀ with known
// singular vectors and values (tall, wide and square), orthogonalises it
// and checks O·vₖ = p⁵(σₖ/‖G‖_F)·uₖ: the singular vectors are kept, every
// singular value lands where the quintic sends it, inside [0.68, 1.21]
// for inputs down to 0.003·‖G‖_F.
func TestNewtonSchulzSingularValues(t *testing.T) {
	for _, c := range []struct{ rows, cols int }{{24, 10}, {10, 24}, {16, 16}, {64, 40}} {
		rng := rand.New(rand.NewPCG(uint64(c.rows), uint64(c.cols)))
		k := min(c.rows, c.cols)
		us, vs := orthonormal(rng, c.rows, k), orthonormal(rng, c.cols, k)
		sig := make([]float64, k)
		var fro float64
		for i := range sig {
			sig[i] = math.Pow(0.7, float64(i)) // 1 down to 0.7^(k-1): a wide spread
			fro += sig[i] * sig[i]
		}
		fro = math.Sqrt(fro)
		g := make([]float32, c.rows*c.cols)
		for i := range c.rows {
			for j := range c.cols {
				var s float64
				for q := range k {
					s += sig[q] * us[q][i] * vs[q][j]
				}
				g[i*c.cols+j] = float32(s)
			}
		}
		o, err := Orthogonalize(g, c.rows, c.cols, 5, 1e-7)
		if err != nil {
			t.Fatal(err)
		}
		for q := range k {
			// O·v_q, compared with f(σ_q)·u_q.
			want := quintic5(sig[q]/fro, 5)
			var errMax, norm float64
			for i := range c.rows {
				var s float64
				for j := range c.cols {
					s += float64(o[i*c.cols+j]) * vs[q][j]
				}
				norm += s * s
				errMax = math.Max(errMax, math.Abs(s-want*us[q][i]))
			}
			norm = math.Sqrt(norm)
			if errMax > 2e-4 {
				t.Errorf("%d×%d σ%d: |O·v - f(σ)·u| = %.3g, want <= 2e-4", c.rows, c.cols, q, errMax)
			}
			if sig[q]/fro >= 0.003 && (norm < 0.68 || norm > 1.21) {
				t.Errorf("%d×%d σ%d = %.3g·‖G‖: singular value after NS %.4f, want in [0.68, 1.21]", c.rows, c.cols, q, sig[q]/fro, norm)
			}
		}
	}
}

// TestNewtonSchulzTranspose: a tall matrix is worked on as its transpose,
// so NS(Gᵀ) = NS(G)ᵀ (to rounding: the Frobenius sums run in another
// order).
func TestNewtonSchulzTranspose(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	r, c := 30, 7
	g, gt := make([]float32, r*c), make([]float32, r*c)
	for i := range r {
		for j := range c {
			v := float32(rng.NormFloat64())
			g[i*c+j], gt[j*r+i] = v, v
		}
	}
	a, _ := Orthogonalize(g, r, c, 5, 1e-7)
	b, _ := Orthogonalize(gt, c, r, 5, 1e-7)
	for i := range r {
		for j := range c {
			if d := math.Abs(float64(a[i*c+j] - b[j*r+i])); d > 1e-6 {
				t.Fatalf("NS(G)[%d][%d] = %g, NS(Gᵀ)[%d][%d] = %g", i, j, a[i*c+j], j, i, b[j*r+i])
			}
		}
	}
	if _, err := Orthogonalize(g, r, c+1, 5, 1e-7); err == nil {
		t.Error("a wrong shape must be an error")
	}
}

// muonSpans is a small model layout: embedding, norm, three matrices of
// different shapes, an output head.
func muonSpans() ([]Span, int) {
	spec := []struct {
		name, kind string
		shape      []int
	}{
		{"embed", "embedding", []int{20, 8}},
		{"norm", "norm", []int{8}},
		{"tall", "matrix", []int{32, 8}},
		{"wide", "matrix", []int{8, 48}},
		{"square", "matrix", []int{16, 16}},
		{"lm_head.weight", "matrix", []int{20, 8}},
	}
	var spans []Span
	off := 0
	for _, s := range spec {
		n := 1
		for _, d := range s.shape {
			n *= d
		}
		spans = append(spans, Span{Name: s.name, Offset: off, Size: n, Kind: s.kind, Shape: s.shape})
		off += n
	}
	return spans, off
}

func muonConfig() Config {
	c := DefaultConfig()
	c.Name = "muon"
	c.ClipUpdateNorm, c.SkipBadSteps, c.MaxGradNorm, c.WeightDecay = false, false, 0, 0
	return c
}

func seeded(n int, seed uint64, scale float64) []float32 {
	rng := rand.New(rand.NewPCG(seed, seed+1))
	out := make([]float32, n)
	for i := range out {
		out[i] = float32(rng.NormFloat64() * scale)
	}
	return out
}

func rms(x []float32) float64 {
	var s float64
	for _, v := range x {
		s += float64(v) * float64(v)
	}
	return math.Sqrt(s / float64(len(x)))
}

// TestMuonGroupsAndRMS: Muon takes the matrices (not the embedding, the
// norm or lm_head); the first step's change of each Muon matrix has RMS
// lr·muon_rms_scale·(≈1) whatever its shape (without the √max(m, n)
// factor it would be lr·0.2/√max(m, n)); doubling muon_rms_scale doubles
// it; the momentum lands in M, V stays zero.
func TestMuonGroupsAndRMS(t *testing.T) {
	spans, n := muonSpans()
	const lr = 0.01
	var first []float64
	for _, scale := range []float64{0.2, 0.4} {
		cfg := muonConfig()
		cfg.MuonRMSScale = scale
		o, err := NewAdamW(cfg, n, spans)
		if err != nil {
			t.Fatal(err)
		}
		var got []bool
		for i := range spans {
			got = append(got, o.IsMuon(i))
		}
		if want := []bool{false, false, true, true, true, false}; !slices.Equal(got, want) {
			t.Fatalf("Muon spans %v, want %v", got, want)
		}
		p, g := seeded(n, 1, 0.1), seeded(n, 2, 1)
		p0 := append([]float32(nil), p...)
		if _, err := o.Step(p, g, 1, lr); err != nil {
			t.Fatal(err)
		}
		var rs []float64
		for i, s := range spans {
			if !o.IsMuon(i) {
				continue
			}
			d := make([]float32, s.Size)
			for j := range d {
				d[j] = (p0[s.Offset+j] - p[s.Offset+j]) / lr
			}
			r := rms(d)
			if r < 0.68*scale || r > 1.21*scale {
				t.Errorf("scale %g: %s %v: update RMS/lr = %.4f, want %g·[0.68, 1.21]", scale, s.Name, s.Shape, r, scale)
			}
			rs = append(rs, r)
			for j := s.Offset; j < s.Offset+s.Size; j++ {
				if o.V[j] != 0 {
					t.Fatalf("%s: V[%d] = %g, want 0 (Muon keeps no second moment)", s.Name, j-s.Offset, o.V[j])
				}
				if o.M[j] != g[j] { // B = μ·0 + G on the first step
					t.Fatalf("%s: M[%d] = %g, want the gradient %g", s.Name, j-s.Offset, o.M[j], g[j])
				}
			}
		}
		if first == nil {
			first = rs
			continue
		}
		for i := range rs {
			if math.Abs(rs[i]/first[i]-2) > 1e-5 {
				t.Errorf("muon_rms_scale 0.4 vs 0.2: RMS ratio %.6f, want 2", rs[i]/first[i])
			}
		}
	}
}

// TestMuonAdamWGroupUnchanged: with every matrix excluded from Muon the
// optimizer is AdamW bit for bit (the AdamW path does not change).
func TestMuonAdamWGroupUnchanged(t *testing.T) {
	spans, n := muonSpans()
	a := DefaultConfig()
	a.SkipMinSteps, a.UpdateMinSteps = 2, 2
	m := a
	m.Name, m.MuonExclude = "muon", []string{"tall", "wide", "square", "lm_head.weight"}
	oa, err := NewAdamW(a, n, spans)
	if err != nil {
		t.Fatal(err)
	}
	om, err := NewAdamW(m, n, spans)
	if err != nil {
		t.Fatal(err)
	}
	pa, pm := seeded(n, 3, 0.1), seeded(n, 3, 0.1)
	for s := range 6 {
		g := seeded(n, uint64(10+s), 1)
		ra, err1 := oa.Step(pa, g, 2, 1e-3)
		rm, err2 := om.Step(pm, g, 2, 1e-3)
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		if ra != rm || !slices.Equal(pa, pm) || !slices.Equal(oa.M, om.M) || !slices.Equal(oa.V, om.V) {
			t.Fatalf("step %d: muon with everything excluded differs from adamw", s)
		}
	}
}

// TestMuonSharedPath: Muon steps go through the shared gradient clipping,
// skip-step, update clipping and non-finite checks.
func TestMuonSharedPath(t *testing.T) {
	spans, n := muonSpans()
	cfg := muonConfig()
	cfg.SkipBadSteps, cfg.SkipMinSteps, cfg.SkipWindow, cfg.SkipSigma = true, 3, 8, 3
	cfg.ClipUpdateNorm, cfg.UpdateMinSteps, cfg.UpdateWindow, cfg.UpdateSigma = true, 3, 8, 0.5
	cfg.MaxGradNorm = 1
	o, err := NewAdamW(cfg, n, spans)
	if err != nil {
		t.Fatal(err)
	}
	p := seeded(n, 4, 0.1)
	for s := range 6 {
		r, err := o.Step(p, seeded(n, uint64(20+s), 1), 2+0.01*float64(s%2), 1e-3)
		if err != nil {
			t.Fatal(err)
		}
		if !r.GradClipped {
			t.Errorf("step %d: grad norm %.3g > 1 not clipped", s, r.GradNorm)
		}
		if r.UpdateNorm <= 0 || r.ParamNorm <= 0 || r.AdamMNorm <= 0 {
			t.Errorf("step %d: vitals %+v", s, r)
		}
	}
	// A loss far above the window: skipped, nothing changes.
	p0, m0 := append([]float32(nil), p...), append([]float32(nil), o.M...)
	r, err := o.Step(p, seeded(n, 99, 1), 1e6, 1e-3)
	if err != nil || !r.Skipped {
		t.Fatalf("outlier loss: %+v, %v; want a skipped step", r, err)
	}
	if !slices.Equal(p, p0) || !slices.Equal(o.M, m0) {
		t.Error("a skipped step changed the weights or the Muon momentum")
	}
	// A NaN gradient in a Muon matrix: ErrNonFinite, nothing changes.
	g := seeded(n, 100, 1)
	g[spans[2].Offset+3] = float32(math.NaN())
	if _, err := o.Step(p, g, 2, 1e-3); !errors.Is(err, ErrNonFinite) {
		t.Fatalf("NaN gradient: %v, want ErrNonFinite", err)
	}
	if !slices.Equal(p, p0) || !slices.Equal(o.M, m0) {
		t.Error("a non-finite step changed the weights or the Muon momentum")
	}
	// A tight update clip scales the whole update, Muon's part included.
	c2 := muonConfig()
	c2.ClipUpdateNorm, c2.UpdateMinSteps, c2.UpdateWindow, c2.UpdateSigma = true, 2, 8, 1e-3
	o2, _ := NewAdamW(c2, n, spans)
	q := seeded(n, 5, 0.1)
	for range 3 {
		o2.UpdateNorms.Push(1) // a window of small norms: the next one is clipped
	}
	before := append([]float32(nil), q...)
	r, err = o2.Step(q, seeded(n, 50, 10), 2, 1e-3)
	if err != nil || !r.UpdateClipped || math.Abs(r.UpdateNormPost-1) > 1e-9 {
		t.Fatalf("tight update clip: %+v, %v", r, err)
	}
	var moved float64
	for i := range q {
		d := float64(q[i] - before[i])
		moved += d * d
	}
	if got, want := math.Sqrt(moved), 1e-3*r.UpdateNormPost; math.Abs(got-want) > 1e-3*want {
		t.Errorf("clipped step moved θ by %.6g, want lr·update_norm_post = %.6g", got, want)
	}
}

// TestMuonConfigErrors: bad Muon settings are errors naming the field;
// they are checked only when optim.name = "muon".
func TestMuonConfigErrors(t *testing.T) {
	cases := []struct {
		field string
		mod   func(*Config)
	}{
		{"optim.name", func(c *Config) { c.Name = "sgd" }},
		{"optim.muon_momentum", func(c *Config) { c.MuonMomentum = 1 }},
		{"optim.muon_momentum", func(c *Config) { c.MuonMomentum = math.NaN() }},
		{"optim.muon_ns_steps", func(c *Config) { c.MuonNSSteps = 0 }},
		{"optim.muon_eps", func(c *Config) { c.MuonEps = 0 }},
		{"optim.muon_rms_scale", func(c *Config) { c.MuonRMSScale = -0.2 }},
		{"optim.muon_exclude[1]", func(c *Config) { c.MuonExclude = []string{"lm_head.weight", ""} }},
		{"optim.muon_exclude[0]", func(c *Config) { c.MuonExclude = []string{"model.layers.[.gate"} }},
	}
	for _, c := range cases {
		cfg := DefaultConfig()
		cfg.Name = "muon"
		c.mod(&cfg)
		err := cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), c.field) {
			t.Errorf("%s: error %v, want one naming %s", c.field, err, c.field)
		}
		if c.field != "optim.name" {
			cfg.Name = "adamw"
			if err := cfg.Validate(); err != nil {
				t.Errorf("%s under adamw: %v, want no error", c.field, err)
			}
		}
	}
	if err := DefaultConfig().Validate(); err != nil {
		t.Errorf("defaults: %v", err)
	}
	// Patterns: '*' spans the dots of a tensor name.
	spans, n := muonSpans()
	cfg := muonConfig()
	cfg.MuonExclude = []string{"t*l", "squ?re"}
	o, err := NewAdamW(cfg, n, spans)
	if err != nil {
		t.Fatal(err)
	}
	var got []bool
	for i := range spans {
		got = append(got, o.IsMuon(i))
	}
	if want := []bool{false, false, false, true, false, true}; !slices.Equal(got, want) {
		t.Errorf("muon_exclude [t*l squ?re]: Muon spans %v, want %v", got, want)
	}
	// A Muon matrix without a usable shape is an error naming it.
	for _, shape := range [][]int{nil, {4}, {3, 5}} {
		cfg := DefaultConfig()
		cfg.Name = "muon"
		_, err := NewAdamW(cfg, 16, []Span{{Name: "w", Offset: 0, Size: 16, Kind: "matrix", Shape: shape}})
		if err == nil || !strings.Contains(err.Error(), "matrix w") {
			t.Errorf("shape %v: %v, want an error naming matrix w", shape, err)
		}
	}
}
