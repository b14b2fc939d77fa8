package loader

import (
	"math"
	"testing"
)

// TestShufflePhases is the seed-001 diagnostic as a statistic: on data
// sorted by topic, an LCG with a small stride gives batches that stay on one
// topic for many steps (phases: lag-1 autocorrelation near 1, long runs of
// dominated batches), while Feistel batches have no phases: no batch is
// dominated by a topic and the lag-1 autocorrelation is near 0. The
// non-linear round function (RoundMix) is also free of the residual
// short-lag correlation that Levanter's affine one leaves.
func TestShufflePhases(t *testing.T) {
	sy := Synthetic{Items: 100_003, Blocks: 8, Batch: 32, Seed: 1}
	const steps = 400
	for _, stride := range []int64{1, 3, 7} {
		lcg, err := sy.Composition(PermSpec{Kind: PermLCG, LCGStride: stride}, steps, 20)
		if err != nil {
			t.Fatal(err)
		}
		if lcg.Lag1() < 0.9 || lcg.MaxRun < 20 {
			t.Errorf("lcg stride %d: lag-1 autocorrelation %.3f, max dominated run %d: want phases (> 0.9, ≥ 20)", stride, lcg.Lag1(), lcg.MaxRun)
		}
	}
	for _, items := range []int64{100_003, 1 << 17} {
		for seed := uint64(1); seed <= 4; seed++ {
			sy.Items, sy.Seed = items, seed
			fe, err := sy.Composition(PermSpec{Kind: PermFeistel}, steps, 20)
			if err != nil {
				t.Fatal(err)
			}
			if l1 := fe.Lag1(); l1 > 0.15 || l1 < -0.15 || fe.MaxRun > 1 || fe.MeanMaxShare > 0.35 {
				t.Errorf("feistel N=%d seed %d: lag-1 %.3f, max dominated run %d, mean max share %.3f: want no phases", items, seed, l1, fe.MaxRun, fe.MeanMaxShare)
			}
			mx, err := sy.Composition(PermSpec{Kind: PermFeistel, Round: RoundMix}, steps, 20)
			if err != nil {
				t.Fatal(err)
			}
			// i.i.d. batches: |ACF(k)| ~ 1/sqrt(steps·blocks) ≈ 0.02
			for k := 1; k < len(mx.ACF); k++ {
				if mx.ACF[k] > 0.1 || mx.ACF[k] < -0.1 {
					t.Errorf("feistel-mix N=%d seed %d: autocorrelation at lag %d = %.3f, want |·| < 0.1", items, seed, k, mx.ACF[k])
				}
			}
			if mx.MaxRun > 1 {
				t.Errorf("feistel-mix N=%d seed %d: dominated run %d", items, seed, mx.MaxRun)
			}
		}
	}
}

// TestLoaderComposition: the loader's own batches measured by source match
// the mixture, and by block show no phases with Feistel.
func TestLoaderComposition(t *testing.T) {
	ds := synthDataset(40000, 20000)
	cfg := testConfig()
	cfg.Sources = []SourceConfig{{Name: "src0", Weight: 3}, {Name: "src1", Weight: 1}}
	l := mustNew(t, ds, cfg, Options{SeqLen: 8, Schedule: ConstantBatch(32)})
	c, names, err := l.Composition("feistel", 200, 0, 5)
	if err != nil {
		t.Fatal(err)
	}
	if len(names) != 2 || c.Global[0] < 0.74 || c.Global[0] > 0.76 {
		t.Fatalf("global shares %v (names %v), want 0.75/0.25", c.Global, names)
	}
	c, names, err = l.Composition("feistel", 200, 4, 5)
	if err != nil {
		t.Fatal(err)
	}
	if len(names) != 8 || c.Lag1() > 0.15 || c.MaxRun > 1 {
		t.Fatalf("by block: lag1 %.3f max run %d", c.Lag1(), c.MaxRun)
	}
}

func TestComposeErrors(t *testing.T) {
	if _, err := Compose("x", 1, 2, 3, nil, nil); err == nil {
		t.Fatal("one step: want error")
	}
	if _, err := Compose("x", 3, 2, 3, func(int) ([]int, error) { return []int{5}, nil }, nil); err == nil {
		t.Fatal("label out of range: want error")
	}
}

// TestMixingBlocksIID: with the default round function the source
// composition of consecutive batches is uncorrelated (the reason RoundMix
// is the default: with RoundMul the K = 1024 block shuffle leaves an
// autocorrelation of about −0.6 at lag 2, logged here).
func TestMixingBlocksIID(t *testing.T) {
	ds := synthDataset(400000, 300000, 200000, 100000, 50000)
	for _, round := range []string{RoundMix, RoundMul} {
		cfg := testConfig()
		cfg.MixBlock, cfg.FeistelRound = 1024, round
		l := mustNew(t, ds, cfg, Options{SeqLen: 8, Schedule: ConstantBatch(16)})
		c, _, err := l.Composition(round, 1000, 0, 30)
		if err != nil {
			t.Fatal(err)
		}
		worst := 0.0
		for _, a := range c.ACF[1:] {
			worst = max(worst, a, -a)
		}
		t.Logf("round %s: lag-1 %.3f, max |acf| over lags 1..30 %.3f", round, c.Lag1(), worst)
		if round == RoundMix && worst > 0.1 {
			t.Errorf("round %s: max |acf| %.3f, want < 0.1 (i.i.d. noise ≈ 0.03)", round, worst)
		}
	}
}

// TestCompositionAcrossStages: a planned mixture change (a data stage,
// switched at once or ramped over 200 steps) is not drift. Deviations are
// measured from the weights in force (inside a ramp, each ramp step's own
// counts), so the default permutation stays near i.i.d. across the switch
// and through the ramp, while deviations from the all-steps mean (computed
// here for contrast) see the change as a strong autocorrelation.
func TestCompositionAcrossStages(t *testing.T) {
	ds := synthDataset(400000, 400000)
	for _, ramp := range []int{0, 200} {
		cfg := testConfig()
		cfg.Sources = []SourceConfig{{Name: "src0", Weight: 3}, {Name: "src1", Weight: 1}}
		cfg.Stages = []Stage{{StartStep: 300, RampSteps: ramp, Weights: map[string]float64{"src0": 1, "src1": 3}}}
		cfg.MixBlock = 1024 // many batches per mixing block, as in TestMixingBlocksIID
		l := mustNew(t, ds, cfg, Options{SeqLen: 8, Schedule: ConstantBatch(32)})
		const steps = 600
		c, _, err := l.Composition("feistel-mix", steps, 0, 10)
		if err != nil {
			t.Fatal(err)
		}
		worst := 0.0
		for _, a := range c.ACF[1:] {
			worst = max(worst, math.Abs(a))
		}
		// Lag-1 autocorrelation around the all-steps mean, for contrast.
		var num, den float64
		for b := 0; b < 2; b++ {
			for s := 0; s < steps; s++ {
				d := c.Shares[s][b] - c.Global[b]
				den += d * d
				if s+1 < steps {
					num += d * (c.Shares[s+1][b] - c.Global[b])
				}
			}
		}
		naive := num / den
		t.Logf("ramp_steps %d: max |acf| around the stage weights %.3f; lag-1 around the global mean %.3f", ramp, worst, naive)
		if worst > 0.15 {
			t.Errorf("ramp_steps %d: max |acf| %.3f across a stage change, want < 0.15", ramp, worst)
		}
		if naive < 0.5 {
			t.Errorf("ramp_steps %d: the stage change should dominate the naive statistic (lag-1 %.3f)", ramp, naive)
		}
	}
}
