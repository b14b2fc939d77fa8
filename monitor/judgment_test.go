package monitor

import (
	"math"
	"testing"
)

// shakespeareLike is a healthy byte-level run of vocab 256: the loss starts
// at ln V and falls, update_to_weight grows with the warm-up, the batches'
// token entropy sits near 3.1 nats.
func shakespeareLike(c *curve, step int64) Sample {
	s := c.sample(step)
	v := s.Values
	v["train_loss_raw"] = 2 + (math.Log(256)-2)*math.Exp(-float64(step)/60) + 0.02*c.rng.NormFloat64()
	v["update_to_weight"] = 0.0004*float64(min(step, 10)) + 0.0001*c.rng.Float64()
	v["batch_token_entropy"] = 3.1 + 0.03*c.rng.NormFloat64()
	return s
}

// fault turns a healthy sample into a faulty one from step from on.
type fault struct {
	name string
	// apply changes the values of step s, k = s − fault step (k ≥ 0).
	apply func(v map[string]float64, k int64)
	rule  string
}

var judgmentFaults = []fault{
	{"lr ×1000 (update then blown-up loss)", func(v map[string]float64, k int64) {
		if k == 0 {
			v["update_to_weight"] = 3
			return
		}
		v["train_loss_raw"] = 26 + float64(k%7)*3
	}, RuleDivergence},
	{"LR ×100 at every step", func(v map[string]float64, k int64) {
		v["update_to_weight"] *= 100
	}, RuleDivergence},
	{"blown-up loss only", func(v map[string]float64, k int64) {
		v["train_loss_raw"] = 100 + float64(k%5)*20
	}, RuleDivergence},
	{"random-token batches", func(v map[string]float64, k int64) {
		v["batch_token_entropy"] = 5.1 + 0.01*float64(k%3)
	}, RuleBatchAnomaly},
	{"repeated-token batches", func(v map[string]float64, k int64) {
		v["batch_token_entropy"] = 0.2
	}, RuleBatchAnomaly},
}

// TestJudgmentAtEveryMoment places each fault at the moments that blinded
// the windowed rules (step 5 and 15 of a fresh run, 5 steps after a resume
// with and without the history seeded, right after a rollback to an
// earlier step), and requires the SEV0/SEV1 within 3 steps of the fault.
func TestJudgmentAtEveryMoment(t *testing.T) {
	type moment struct {
		name      string
		start     int64 // first step this monitor sees
		seed      bool  // history (steps 1..start−1) seeded
		faultStep int64
	}
	moments := []moment{
		{"fresh step 5", 1, false, 5},
		{"fresh step 15", 1, false, 15},
		{"resume at 200, +5, seeded", 201, true, 205},
		{"resume at 200, +5, not seeded", 201, false, 205},
		{"rollback to 100 after 300, +2", 101, true, 102},
	}
	for _, f := range judgmentFaults {
		for _, mo := range moments {
			t.Run(f.name+"/"+mo.name, func(t *testing.T) {
				cfg := testConfig()
				cfg.Window = 64
				m := vocabMonitor(t, cfg)
				c := newCurve(3)
				if mo.seed {
					var hist []Sample
					for s := int64(1); s < mo.start; s++ {
						hist = append(hist, shakespeareLike(c, s))
					}
					m.Seed(hist)
					if got := m.Alerts(); len(got) != 0 {
						t.Fatalf("seeding fired %v", got)
					}
				}
				fired := int64(-1)
				for s := mo.start; s < mo.faultStep+40; s++ {
					smp := shakespeareLike(c, s)
					if s >= mo.faultStep {
						f.apply(smp.Values, s-mo.faultStep)
					}
					for _, a := range m.Observe(smp) {
						if a.Severity > SEV1 {
							continue
						}
						if s < mo.faultStep {
							t.Fatalf("false alarm before the fault: %s %s at step %d: %s", a.Severity, a.Rule, a.Step, a.Message)
						}
						if fired < 0 && a.Rule == f.rule {
							fired = s
						}
					}
				}
				if fired < 0 {
					t.Fatalf("%s never fired", f.rule)
				}
				if lat := fired - mo.faultStep; lat > 3 {
					t.Errorf("%s fired at step %d, %d steps after the fault (want ≤ 3)", f.rule, fired, lat)
				}
			})
		}
	}
}

// TestDivergenceBaselineFrozen: a blow-up that lasts longer than the window
// keeps firing after each cooldown; diverged losses never enter the window.
func TestDivergenceBaselineFrozen(t *testing.T) {
	cfg := testConfig()
	cfg.Window, cfg.Cooldown = 16, 10
	cfg.DivergenceLossMargin = 1000 // only the window criterion can see it
	m := vocabMonitor(t, cfg)
	c := newCurve(5)
	var fires []int64
	for s := int64(1); s <= 120; s++ {
		smp := shakespeareLike(c, s)
		if s > 30 {
			smp.Values["train_loss_raw"] = 40 + float64(s%9)
		}
		for _, a := range m.Observe(smp) {
			if a.Rule == RuleDivergence {
				fires = append(fires, a.Step)
			}
		}
	}
	if len(fires) < 5 {
		t.Fatalf("divergence fired at %v over 90 diverged steps; want it again after every cooldown", fires)
	}
	if fires[0] != 33 {
		t.Errorf("first divergence at step %d, want 33 (3 consecutive steps from 31)", fires[0])
	}
}

// TestSeedFiresNothing: a history holding a diverged stretch and a garbage
// batch seeds the windows without alerts, and the diverged values do not
// become the baseline.
func TestSeedFiresNothing(t *testing.T) {
	cfg := testConfig()
	cfg.DivergenceLossMargin = 1000 // only the window criterion can see it
	m := vocabMonitor(t, cfg)
	c := newCurve(9)
	var hist []Sample
	for s := int64(1); s <= 100; s++ {
		smp := shakespeareLike(c, s)
		if s == 50 {
			smp.Values["batch_token_entropy"] = 5.2
			smp.Values["update_to_weight"] = 4
		}
		hist = append(hist, smp)
	}
	m.Seed(hist)
	if a := m.Alerts(); len(a) != 0 {
		t.Fatalf("Seed fired %d alerts: %v", len(a), a)
	}
	// The next steps are judged against the seeded windows: a loss 4× the
	// window median (≈ 2.9) fires through the window criterion, which
	// needs divergence_min_samples values this monitor has not observed.
	for s := int64(101); s <= 103; s++ {
		smp := shakespeareLike(c, s)
		smp.Values["train_loss_raw"] = 12
		m.Observe(smp)
	}
	if countRule(m.Alerts(), RuleDivergence) == 0 {
		t.Fatalf("divergence not seen against the seeded window: %v", m.Alerts())
	}
}

// vocabMonitor is a monitor without files over a vocabulary of 256 (ln V
// = 5.55), closed when the test ends.
func vocabMonitor(t *testing.T, cfg Config) *Monitor {
	t.Helper()
	m, err := New(cfg, Options{Logger: quietLogger(), Vocab: 256})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// TestUpdateRiseKnowsPlannedChanges: an LR ×100 from step 150, in a late
// cooldown whose updates are far below the window's median, is a
// divergence within 3 steps; a planned re-warm-up that raises the LR 100×
// over 12 steps (min_lr = lr/100, Marin's rewarm_at) is not.
func TestUpdateRiseKnowsPlannedChanges(t *testing.T) {
	run := func(u2w func(s int64) float64) []Alert {
		cfg := testConfig()
		cfg.Window = 64
		m := vocabMonitor(t, cfg)
		c := newCurve(4)
		var got []Alert
		for s := int64(1); s <= 200; s++ {
			smp := c.sample(s)
			smp.Values["update_to_weight"] = u2w(s) * (1 + 0.03*c.rng.NormFloat64())
			for _, a := range m.Observe(smp) {
				if a.Rule == RuleDivergence {
					got = append(got, a)
				}
			}
		}
		return got
	}
	// cooldown: 0.004 until step 100, decaying to 0.0004 by step 140
	cool := func(s int64) float64 {
		switch {
		case s < 100:
			return 0.004
		case s < 140:
			return 0.004 * math.Pow(0.1, float64(s-100)/40)
		}
		return 0.0004
	}
	got := run(func(s int64) float64 {
		if s >= 150 {
			return 100 * cool(s)
		}
		return cool(s)
	})
	if len(got) == 0 || got[0].Step > 153 {
		t.Fatalf("LR ×100 in the cooldown: divergence %v, want one within 3 steps of 150", got)
	}
	rewarm := run(func(s int64) float64 {
		switch {
		case s < 150:
			return 0.00004
		case s < 162:
			return 0.00004 * math.Pow(100, float64(s-150)/12)
		}
		return 0.004
	})
	if len(rewarm) > 0 {
		t.Fatalf("planned re-warm-up ×100 over 12 steps fired %v", rewarm)
	}
}
