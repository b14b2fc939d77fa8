package replicas

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/kernels"
	"github.com/kestrel-lm/kestrel/internal/model"
)

func testConfig() model.Config {
	return model.Config{Vocab: 37, DModel: 32, NLayers: 2, NHeads: 4, NKVHeads: 2, MLPHidden: 48,
		SeqLen: 16, RopeTheta: 10000, NormEps: 1e-5, QKNorm: true, ZLoss: 1e-3, InitStd: 0.1}
}

// batches are a step's n micro-batches of up to mb rows out of B (the
// last one shorter when B is not a multiple of mb), fixed by seed.
func batches(c model.Config, B, mb int, seed uint64) []Pass {
	r := rand.New(rand.NewPCG(seed, 3))
	var ps []Pass
	for r0 := 0; r0 < B; r0 += mb {
		n := min(mb, B-r0)
		ps = append(ps, Pass{Batch: model.RandomBatch(c, n, r), Scale: float32(n) / float32(B)})
	}
	return ps
}

// run accumulates ps on a Set of p replicas of a fresh model (seed 5)
// with the pool on threads threads, and returns the gradient, the
// per-pass losses, the replicas' squared norms and the spans' count.
func run(t *testing.T, c model.Config, p, threads int, steps [][]Pass) ([]float32, []float64, []float64, int) {
	t.Helper()
	defer kernels.SetThreads(kernels.Threads())
	kernels.SetThreads(threads)
	m, err := model.New(c, 5)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(m, p, 4, c.SeqLen)
	if err != nil {
		t.Fatal(err)
	}
	var losses []float64
	var st Step
	for i, ps := range steps {
		m.Cfg.ZLoss = float64(i+2) * 1e-3 // a knob that changes between steps: the replicas follow it
		fill := func(k int, buf Slot) (Pass, error) {
			p := ps[k]
			n := len(p.Batch.Inputs)
			copy(buf.Inputs, p.Batch.Inputs)
			copy(buf.Targets, p.Batch.Targets)
			return Pass{Batch: &model.Batch{B: p.Batch.B, T: p.Batch.T, Inputs: buf.Inputs[:n], Targets: buf.Targets[:n]}, Scale: p.Scale}, nil
		}
		done := func(k int, _ Pass, x model.Stats, v *model.Vitals) {
			if v == nil || len(v.MaxAttnLogit) != c.NLayers {
				t.Fatalf("pass %d: vitals %v", k, v)
			}
			losses = append(losses, x.Loss)
		}
		if st, err = s.Run(len(ps), fill, done, true); err != nil {
			t.Fatal(err)
		}
	}
	return append([]float32(nil), m.Grads...), losses, st.Sq, len(st.Spans)
}

// sequential accumulates the same steps in one model, one pass after the
// other (the trainer's train.parallel_micro_batches = 1).
func sequential(t *testing.T, c model.Config, steps [][]Pass) ([]float32, []float64) {
	t.Helper()
	m, err := model.New(c, 5)
	if err != nil {
		t.Fatal(err)
	}
	var losses []float64
	for i, ps := range steps {
		m.Cfg.ZLoss = float64(i+2) * 1e-3
		m.StartAccumulation()
		for _, p := range ps {
			st, err := m.ForwardBackward(p.Batch, p.Scale)
			if err != nil {
				t.Fatal(err)
			}
			losses = append(losses, st.Loss)
		}
	}
	return m.Grads, losses
}

// TestRunSameBitsAnyThreads: the gradient, the passes' losses and the
// replicas' norms are the same bits on one thread as on two, for 2 and 3
// replicas, and one to five micro-batches (the last one shorter, rounds
// not full, a replica idle); a later step with fewer micro-batches than
// replicas leaves the idle replica's stale gradient out of the sum; the
// losses are the sequential ones bit for bit (a pass's loss does not
// depend on the order of accumulation) and the gradient agrees with the
// sequential one to float rounding.
func TestRunSameBitsAnyThreads(t *testing.T) {
	c := testConfig()
	for _, p := range []int{2, 3} {
		for _, B := range []int{3, 8, 11, 18} {
			steps := [][]Pass{batches(c, B, 4, uint64(B)), batches(c, 3, 4, 99)}
			g1, l1, sq1, spans := run(t, c, p, 1, steps)
			g2, l2, sq2, _ := run(t, c, p, 2, steps)
			for i := range g1 {
				if math.Float32bits(g1[i]) != math.Float32bits(g2[i]) {
					t.Fatalf("P=%d B=%d: Grads[%d] = %v on 1 thread, %v on 2", p, B, i, g1[i], g2[i])
				}
			}
			for r := range sq1 {
				if sq1[r] != sq2[r] {
					t.Fatalf("P=%d B=%d: |G_%d|² = %v on 1 thread, %v on 2", p, B, r, sq1[r], sq2[r])
				}
			}
			if spans != 3 { // the last step: one micro-batch, one round
				t.Errorf("P=%d B=%d: %d spans in a step of one round, want 3", p, B, spans)
			}
			gs, ls := sequential(t, c, steps)
			for i := range ls {
				if l1[i] != ls[i] || l2[i] != ls[i] {
					t.Fatalf("P=%d B=%d: pass %d loss %v, %v; sequential %v", p, B, i, l1[i], l2[i], ls[i])
				}
			}
			// the last step is one pass: its gradient is the sequential one bit for bit
			for i := range gs {
				if math.Float32bits(g1[i]) != math.Float32bits(gs[i]) && (g1[i] != 0 || gs[i] != 0) {
					t.Fatalf("P=%d B=%d: one micro-batch: Grads[%d] = %v, sequential %v (a stale replica added?)", p, B, i, g1[i], gs[i])
				}
			}
		}
	}
}

// TestRunMatchesSequential: with several micro-batches per step the
// replicas' sum agrees with accumulating in one model to float rounding
// (another order of summation: not bit for bit), and each replica's
// squared norm is that of its own summed gradient.
func TestRunMatchesSequential(t *testing.T) {
	c := testConfig()
	for _, tc := range []struct{ p, B int }{{2, 8}, {2, 11}, {3, 18}, {2, 24}} {
		steps := [][]Pass{batches(c, tc.B, 4, uint64(tc.B))}
		g, _, sq, _ := run(t, c, tc.p, 2, steps)
		gs, _ := sequential(t, c, steps)
		var maxAbs, maxDiff float64
		for i := range g {
			maxAbs = max(maxAbs, math.Abs(float64(gs[i])))
			maxDiff = max(maxDiff, math.Abs(float64(g[i]-gs[i])))
		}
		if maxAbs == 0 || maxDiff > 1e-5*maxAbs {
			t.Errorf("P=%d B=%d: max |Δgrad| %g against max |grad| %g", tc.p, tc.B, maxDiff, maxAbs)
		}
		// each replica's gradient on its own: its micro-batches accumulated sequentially
		ps := steps[0]
		for r := 0; r < tc.p; r++ {
			var mine []Pass
			for k := r; k < len(ps); k += tc.p {
				mine = append(mine, ps[k])
			}
			gr, _ := sequential(t, c, [][]Pass{mine})
			var want float64
			for _, x := range gr {
				want += float64(x) * float64(x)
			}
			if math.Abs(sq[r]-want) > 1e-5*want {
				t.Errorf("P=%d B=%d: |G_%d|² = %v, want %v", tc.p, tc.B, r, sq[r], want)
			}
		}
	}
}

// TestNewRefuses: fewer than two replicas, and an MoE model.
func TestNewRefuses(t *testing.T) {
	m, err := model.New(testConfig(), 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := New(m, 1, 4, 16); err == nil || !strings.Contains(err.Error(), "at least 2") {
		t.Errorf("P=1: %v", err)
	}
	c := testConfig()
	c.MoEEvery, c.MoEExperts, c.MoETopK, c.MoEExpertHidden, c.MoEBalance = 1, 4, 2, 16, "aux"
	moe, err := model.New(c, 1)
	if err != nil {
		t.Skip("MoE config:", err)
	}
	if _, err := New(moe, 2, 4, 16); err == nil || !strings.Contains(err.Error(), "mixture-of-experts") {
		t.Errorf("MoE: %v", err)
	}
}

// TestFor: the Set a run asks for, or nil and why: P ≤ 1 quietly, a
// data-parallel run, a network that is not a model.Model and an MoE
// model each with their reason; else P replicas of the model.
func TestFor(t *testing.T) {
	m, err := model.New(testConfig(), 1)
	if err != nil {
		t.Fatal(err)
	}
	c := testConfig()
	c.MoEEvery, c.MoEExperts, c.MoETopK, c.MoEExpertHidden, c.MoEBalance = 1, 4, 2, 16, "aux"
	moe, err := model.New(c, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		m    *model.Model
		p    int
		dp   bool
		why  string // "" and P = p: a Set
	}{
		{"one", m, 1, false, ""}, {"zero", m, 0, true, ""},
		{"data-parallel", m, 2, true, "data-parallel run accumulates in one model"},
		{"not a model", nil, 2, false, "not a model.Model"},
		{"moe", moe, 2, false, "mixture-of-experts"},
		{"two", m, 2, false, ""}, {"three", m, 3, false, ""},
	} {
		s, why := For(tc.m, tc.p, 4, 16, tc.dp)
		switch {
		case tc.why != "" && (s != nil || !strings.Contains(why, tc.why)):
			t.Errorf("%s: set %v, why %q; want none because %q", tc.name, s != nil, why, tc.why)
		case tc.why == "" && tc.p <= 1 && (s != nil || why != ""):
			t.Errorf("%s: set %v, why %q; want none, quietly", tc.name, s != nil, why)
		case tc.why == "" && tc.p > 1 && (s == nil || why != "" || s.P() != tc.p || s.Replica(0) != m || len(s.Slot(tc.p-1).Inputs) != 4*16):
			t.Errorf("%s: set %v, why %q; want %d replicas of the model", tc.name, s != nil, why, tc.p)
		}
	}
}

// TestFoldBits: Fold's sum is replica 0 + 1 + … added in that order and
// each squared norm the float64 sum, block by block, of kernels.Dot over
// the block (the bits the noise scale had before the norms joined the
// sum's pass), with and without the norms, with every replica run and with
// one idle (left out, its norm 0).
func TestFoldBits(t *testing.T) {
	c := testConfig()
	big := c
	big.DModel, big.MLPHidden = 64, 160 // over two blocks of Fold, the last one short
	for _, tc := range []struct {
		cfg          model.Config
		p, n         int
		norms        bool
		wantMoreThan int // parameters
	}{{c, 2, 2, true, 0}, {c, 3, 2, true, 0}, {big, 3, 3, true, 2 * blockLen}, {big, 2, 2, false, 2 * blockLen}} {
		m, err := model.New(tc.cfg, 5)
		if err != nil {
			t.Fatal(err)
		}
		if len(m.Grads) <= tc.wantMoreThan || len(m.Grads)%blockLen == 0 {
			t.Fatalf("%d parameters: want over %d, not a multiple of %d", len(m.Grads), tc.wantMoreThan, blockLen)
		}
		s, err := New(m, tc.p, 4, tc.cfg.SeqLen)
		if err != nil {
			t.Fatal(err)
		}
		s.Begin()
		if _, _, err := s.Round(batches(tc.cfg, 4*tc.n, 4, 7)); err != nil {
			t.Fatal(err)
		}
		want := append([]float32(nil), m.Grads...)
		wantSq := make([]float64, tc.p)
		for r := 0; r < tc.n; r++ {
			g := s.Replica(r).Grads
			for lo := 0; lo < len(g); lo += blockLen {
				x := g[lo:min(lo+blockLen, len(g))]
				wantSq[r] += float64(kernels.Dot(x, x))
			}
			if r > 0 {
				kernels.Add(want, want, g)
			}
		}
		var sq []float64
		if tc.norms {
			sq = []float64{-1, -1, -1}[:tc.p]
		}
		s.Fold(sq)
		for i := range want {
			if math.Float32bits(m.Grads[i]) != math.Float32bits(want[i]) {
				t.Fatalf("P=%d, %d passes: Grads[%d] = %v, want %v", tc.p, tc.n, i, m.Grads[i], want[i])
			}
		}
		for r := range sq {
			if sq[r] != wantSq[r] {
				t.Errorf("P=%d, %d passes: |G_%d|² = %v, want %v", tc.p, tc.n, r, sq[r], wantSq[r])
			}
		}
	}
}
