package loader

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/batchsched"
)

// rampConfig: data.sources 6:3:1; a first stage ramping over 10 steps
// from them to src1 alone (src0 and src2 leave); a second stage ramping
// over 40 steps in which src2 enters from 0 (a source set that differs);
// a third stage switching at once.
func rampConfig() Config {
	c := testConfig()
	c.MixBlock = 100
	c.Sources = []SourceConfig{{Name: "src0", Weight: 6}, {Name: "src1", Weight: 3}, {Name: "src2", Weight: 1}}
	c.Stages = []Stage{
		{StartStep: 21, RampSteps: 10, Weights: map[string]float64{"src1": 1}},
		{StartStep: 41, RampSteps: 40, Weights: map[string]float64{"src0": 1, "src2": 3}},
		{StartStep: 101, Weights: map[string]float64{"src0": 1}},
	}
	return c
}

// TestRampWeights: MixWeights at the edges of each ramp (ReportBase 1, so
// the stage at start_step 21 starts at step index 20).
func TestRampWeights(t *testing.T) {
	l := mustNew(t, synthDataset(200000, 100000, 50000), rampConfig(), Options{ReportBase: 1, SeqLen: 8})
	cases := []struct {
		name string
		step int
		want []float64
	}{
		{"before the first ramp", 19, []float64{0.6, 0.3, 0.1}},
		{"first ramp step: a = 1/10 from data.sources", 20, []float64{0.54, 0.37, 0.09}},
		{"mid first ramp: a = 5/10", 24, []float64{0.3, 0.65, 0.05}},
		{"last ramp step: the stage's weights", 29, []float64{0, 1, 0}},
		{"after the ramp", 39, []float64{0, 1, 0}},
		{"second ramp, src2 enters: a = 1/40", 40, []float64{0.25 / 40, 39.0/40 + 0, 0.75 / 40}},
		{"second ramp a = 20/40", 59, []float64{0.125, 0.5, 0.375}},
		{"second ramp a = 39/40", 78, []float64{0.25 * 39 / 40, 1.0 / 40, 0.75 * 39 / 40}},
		{"second ramp done", 79, []float64{0.25, 0, 0.75}},
		{"third stage switches at once", 100, []float64{1, 0, 0}},
	}
	for _, c := range cases {
		got := l.MixWeights(c.step)
		for s := range got {
			if math.Abs(got[s]-c.want[s]) > 1e-12 {
				t.Errorf("%s: MixWeights(%d) = %v, want %v", c.name, c.step, got, c.want)
				break
			}
		}
	}
}

// TestRampCounts: over every ramp step, each source's count so far stays
// within one sequence of Σ w·batch of the interpolated weights (so any
// window's share is the target's within rounding), across a batch-size
// change mid-ramp; no source sequence is skipped or repeated across the
// ramps and stage boundaries.
func TestRampCounts(t *testing.T) {
	ds := synthDataset(200000, 100000, 50000)
	sched := batchsched.Schedule{{Start: 0, Batch: 10}, {Start: 25, Batch: 7}, {Start: 60, Batch: 23}}
	for _, perm := range []string{PermFeistel, PermLCG} {
		cfg := rampConfig()
		cfg.Permutation = perm
		l := mustNew(t, ds, cfg, Options{Schedule: sched, SeqLen: 8, ReportBase: 1})
		seqs := make([][]int64, 3)
		var got, want [3]float64
		for _, ramp := range [][2]int{{20, 29}, {40, 79}} {
			got, want = [3]float64{}, [3]float64{}
			for step := ramp[0]; step < ramp[1]; step++ {
				info, err := l.BatchInfo(step)
				if err != nil {
					t.Fatal(err)
				}
				w := l.MixWeights(step)
				for s := range w {
					want[s] += w[s] * float64(info.Batch)
				}
				for _, r := range info.Rows {
					got[r.SourceIndex]++
				}
				for s := range got {
					if math.Abs(got[s]-want[s]) > 1.0 {
						t.Fatalf("%s: after step index %d src%d has %v sequences of the ramp, the weights ask %.3f", perm, step, s, got[s], want[s])
					}
				}
			}
		}
		var after [3]float64 // steps 79..99: the second stage's weights in mixing blocks of 100
		for step := 0; step < 130; step++ {
			info, err := l.BatchInfo(step)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range info.Rows {
				seqs[r.SourceIndex] = append(seqs[r.SourceIndex], r.Seq)
				if step >= 79 && step < 100 {
					after[r.SourceIndex]++
				}
			}
		}
		if n := after[0] + after[2]; after[1] != 0 || math.Abs(after[0]/n-0.25) > 0.02 {
			t.Fatalf("%s: steps after the second ramp drew %v sequences per source, want 0.25:0:0.75", perm, after)
		}
		for s, js := range seqs {
			slices.Sort(js)
			for i, j := range js {
				if j != int64(i) {
					t.Fatalf("%s: src%d sequence numbers not contiguous at %d (got %d)", perm, s, i, j)
				}
			}
		}
	}
}

// TestRampResume: mid-ramp batches are a pure function of the step — a
// fresh loader (a resume) at the first ramp step, mid-ramp and at the last
// ramp step gives the batches of the uninterrupted one, with prefetch and
// micro-batches; the mixture-block stages after a ramp are unchanged by
// random access into it.
func TestRampResume(t *testing.T) {
	ds := synthDataset(200000, 100000, 50000)
	sched := batchsched.Schedule{{Start: 0, Batch: 10}, {Start: 25, Batch: 7}, {Start: 60, Batch: 23}}
	for _, pack := range []string{PackConcat, PackBOS} {
		cfg := rampConfig()
		cfg.Packing = pack
		ref := mustNew(t, ds, func() Config { c := cfg; c.Prefetch = 0; return c }(), Options{Schedule: sched, Seed: 3, ReportBase: 1})
		want := make([]batchOut, 110)
		for s := range want {
			want[s] = fillStep(t, ref, s, 1000)
		}
		for _, from := range []int{20, 24, 28, 40, 59, 78} {
			res := mustNew(t, ds, cfg, Options{Schedule: sched, Seed: 3, ReportBase: 1})
			for s := from; s < min(from+25, len(want)); s++ {
				if got := fillStep(t, res, s, 3); !equalBatch(got, want[s]) {
					t.Fatalf("%s: resumed at step index %d, step %d differs", pack, from, s)
				}
			}
			if got := fillStep(t, res, 101, 4); !equalBatch(got, want[101]) {
				t.Fatalf("%s: step 101 differs after random access into the ramp", pack)
			}
		}
	}
}

// TestRampOneIsSwitch: ramp_steps 1 is a switch at start_step, bit for bit
// the golden of configs without ramps.
func TestRampOneIsSwitch(t *testing.T) {
	for name, cfg := range goldenCases() {
		c0 := goldenDigest(t, cfg)
		cfg.Stages = slices.Clone(cfg.Stages)
		for i := range cfg.Stages {
			cfg.Stages[i].RampSteps = 1
		}
		if c1 := goldenDigest(t, cfg); c1 != c0 {
			t.Errorf("%s: ramp_steps = 1 changes the batches", name)
		}
	}
}

// TestRampCountsBound: rampCounts over random ramps (sources entering and
// leaving, batches of 1 to 300) gives each step exactly its batch, no
// negative count, and keeps every source's running count within one
// sequence of Σ w·b.
func TestRampCountsBound(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	worst := 0.0
	for trial := 0; trial < 300; trial++ {
		ns := 1 + r.IntN(6)
		prev, next := make([]float64, ns), make([]float64, ns)
		for s := range prev {
			if r.IntN(3) > 0 {
				prev[s] = r.Float64()
			}
			if r.IntN(3) > 0 {
				next[s] = r.Float64()
			}
		}
		prev[r.IntN(ns)] += 0.1
		next[r.IntN(ns)] += 0.1
		prev, _ = normalise(prev, "")
		next, _ = normalise(next, "")
		ramp := 2 + r.IntN(60)
		carry := make([]float64, ns)
		got, want := make([]float64, ns), make([]float64, ns)
		for j := 0; j < ramp-1; j++ {
			a := float64(j+1) / float64(ramp)
			w := make([]float64, ns)
			for s := range w {
				w[s] = (1-a)*prev[s] + a*next[s]
			}
			b := 1 + r.IntN(300)
			c := rampCounts(w, b, carry)
			sum := 0
			for s, x := range c {
				if x < 0 {
					t.Fatalf("trial %d step %d: negative count %v", trial, j, c)
				}
				sum += x
				got[s] += float64(x)
				want[s] += w[s] * float64(b)
				worst = max(worst, math.Abs(got[s]-want[s]))
			}
			if sum != b {
				t.Fatalf("trial %d step %d: counts %v sum to %d, batch %d", trial, j, c, sum, b)
			}
		}
	}
	if worst >= 1 {
		t.Fatalf("a running count strayed %.3f sequences from its target", worst)
	}
	t.Logf("largest running deviation %.3f sequences", worst)
}
