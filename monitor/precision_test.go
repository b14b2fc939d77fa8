package monitor

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// TestClipRateRise: clip_rate_rising fires on a rise of the clip rate over
// its baseline, not on a rate that is high and stable (nanoGPT's recipe
// clips most steps by design).
func TestClipRateRise(t *testing.T) {
	cases := []struct {
		name string
		rate func(step int64) float64 // probability that the step clips
		want bool
	}{
		{"stable 70%", func(int64) float64 { return 0.7 }, false},
		{"stable 100%", func(int64) float64 { return 1 }, false},
		// shakespeare-char: 94% in the first 64 steps, ~60% up to step 192,
		// then 90-100% for the rest of the run.
		{"high from the start", func(s int64) float64 {
			switch {
			case s <= 64:
				return 0.94
			case s <= 192:
				return 0.6
			}
			return 0.95
		}, false},
		{"10% then 80%", func(s int64) float64 {
			if s <= 400 {
				return 0.1
			}
			return 0.8
		}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.SQLite, cfg.TensorBoard = false, false
			m := newTestMonitor(t, cfg, t.TempDir())
			c := newCurve(3)
			rng := rand.New(rand.NewPCG(11, 13))
			var fired []Alert
			for s := int64(1); s <= 800; s++ {
				smp := c.sample(s)
				if rng.Float64() < tc.rate(s) {
					smp.Values["grad_clipped"] = 1
				}
				for _, a := range m.Observe(smp) {
					if a.Rule == RuleClipRate {
						fired = append(fired, a)
					}
				}
			}
			if got := len(fired) > 0; got != tc.want {
				t.Fatalf("clip_rate_rising fired = %v, want %v: %+v", got, tc.want, fired)
			}
			if tc.want {
				a := fired[0]
				if a.Step <= 400 || a.Step > 400+64 || a.Severity != SEV1 || !strings.Contains(a.Message, "up from") {
					t.Errorf("alert %+v: want SEV1 within a window of the rise at step 400, naming the baseline", a)
				}
			}
		})
	}
}

// TestContention: a throughput drop whose process CPU time per step did
// not grow is SEV2 contention with both medians as evidence; one whose CPU
// time grew with the wall time stays a SEV1 throughput_drop, as does one
// without a CPU measurement.
func TestContention(t *testing.T) {
	cases := []struct {
		name      string
		cpuAfter  float64 // cpu_time per step after step 150 (before: 0.8 s for 0.4 s of wall on 2 threads); 0 = not reported
		want, not string
		sev       Severity
	}{
		{"neighbours take the cores", 0.8, RuleContention, RuleThroughputDrop, SEV2},
		{"CPU time below before (spinning less)", 0.7, RuleContention, RuleThroughputDrop, SEV2},
		{"kestrel's own work slowed", 1.2, RuleThroughputDrop, RuleContention, SEV1},
		{"no cpu_time", 0, RuleThroughputDrop, RuleContention, SEV1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := newTestMonitor(t, testConfig(), t.TempDir())
			c := newCurve(5)
			var got []Alert
			for s := int64(1); s <= 260; s++ {
				smp := c.sample(s)
				st, cpu := 0.4*(1+0.01*c.rng.NormFloat64()), 0.8*(1+0.01*c.rng.NormFloat64())
				if s >= 150 {
					st, cpu = 0.6*(1+0.01*c.rng.NormFloat64()), tc.cpuAfter*(1+0.01*c.rng.NormFloat64())
				}
				smp.Values["step_time"] = st
				smp.Values["tokens_per_sec"] = 4096 / st
				smp.Values["mfu"] = 0.3 * 0.4 / st
				if tc.cpuAfter > 0 || s < 150 {
					smp.Values["cpu_time"] = cpu
				}
				if tc.cpuAfter == 0 {
					delete(smp.Values, "cpu_time")
				}
				got = append(got, m.Observe(smp)...)
			}
			fired := rulesFired(got)
			a, ok := fired[tc.want]
			if !ok {
				t.Fatalf("%s did not fire; got %+v", tc.want, got)
			}
			if _, ok := fired[tc.not]; ok {
				t.Errorf("%s fired too: %+v", tc.not, fired[tc.not])
			}
			if a.Severity != tc.sev || a.Step < 150 {
				t.Errorf("alert %s at step %d, want %s after step 150", a.Severity, a.Step, tc.sev)
			}
			n := 0
			for _, x := range got {
				if x.Rule == tc.want {
					n++
				}
			}
			if n != 1 {
				t.Errorf("%d %s alerts for one slowdown (tokens_per_sec and mfu), want 1", n, tc.want)
			}
			if tc.cpuAfter > 0 && (!strings.Contains(a.Message, "wall time per step (median) 0.4") || !strings.Contains(a.Message, "CPU time per step (median) 0.8")) {
				t.Errorf("message lacks the wall and CPU medians: %s", a.Message)
			}
			t.Logf("%s: %s", a.Rule, a.Message)
		})
	}
}

// TestDivergence: each criterion of the SEV0 divergence rule on synthetic
// series, and the near misses that must stay below it.
func TestDivergence(t *testing.T) {
	const u2w = 0.005
	cases := []struct {
		name   string
		vocab  int
		mutate func(s int64, v map[string]float64)
		metric string // "" = must not fire
		at     int64  // step the alert must fire at
	}{
		{"healthy", 256, func(int64, map[string]float64) {}, "", 0},
		{"loss blows up", 256, func(s int64, v map[string]float64) {
			if s >= 150 {
				v["train_loss_raw"] = 40 - float64(s-150)/10
			}
		}, "train_loss_raw", 152},
		{"two-step spike recovers", 256, func(s int64, v map[string]float64) {
			if s == 150 || s == 151 {
				v["train_loss_raw"] = 40
			}
		}, "", 0},
		// A trained model (loss 1.5) at 5 nats: 3× its median, but still
		// better than a uniform prediction over 256 tokens (5.545).
		{"above 3× median but below ln V", 256, func(s int64, v map[string]float64) {
			v["train_loss_raw"] = 1.5 + 0.01*float64(s%3)
			if s >= 150 {
				v["train_loss_raw"] = 5
			}
		}, "", 0},
		{"same without vocabulary", 0, func(s int64, v map[string]float64) {
			v["train_loss_raw"] = 1.5 + 0.01*float64(s%3)
			if s >= 150 {
				v["train_loss_raw"] = 5
			}
		}, "train_loss_raw", 152},
		{"val worse than uniform", 256, func(s int64, v map[string]float64) {
			if s == 200 {
				v["val_loss"] = 7.3
			}
		}, "val_loss", 200},
		{"val near uniform", 256, func(s int64, v map[string]float64) {
			if s == 200 {
				v["val_loss"] = 5.6
			}
		}, "", 0},
		{"val without vocabulary", 0, func(s int64, v map[string]float64) {
			if s == 200 {
				v["val_loss"] = 7.3
			}
		}, "", 0},
		{"update ×1000", 256, func(s int64, v map[string]float64) {
			if s == 150 {
				v["update_to_weight"] = 1000 * u2w
			}
		}, "update_to_weight", 150},
		{"update ×100", 256, func(s int64, v map[string]float64) {
			if s == 150 || s == 151 {
				v["update_to_weight"] = 100 * u2w
			}
		}, "", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig()
			cfg.PauseOnSEV0 = true
			m, err := New(cfg, Options{RunDir: t.TempDir(), Logger: quietLogger(), Vocab: tc.vocab})
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			c := newCurve(6)
			var div []Alert
			for s := int64(1); s <= 260; s++ {
				smp := c.sample(s)
				smp.Values["update_to_weight"] = u2w * (1 + 0.05*c.rng.NormFloat64())
				tc.mutate(s, smp.Values)
				for _, a := range m.Observe(smp) {
					if a.Rule == RuleDivergence {
						div = append(div, a)
					}
				}
			}
			if tc.metric == "" {
				if len(div) > 0 {
					t.Fatalf("divergence fired: %+v", div)
				}
				return
			}
			if len(div) == 0 {
				t.Fatalf("divergence (%s) did not fire", tc.metric)
			}
			a := div[0]
			if a.Metric != tc.metric || a.Step != tc.at || a.Severity != SEV0 || a.Evidence == "" {
				t.Errorf("alert %s %s at step %d (evidence %q), want SEV0 %s at step %d with an incident bundle", a.Severity, a.Metric, a.Step, a.Evidence, tc.metric, tc.at)
			}
			if p, _ := m.Paused(); !p {
				t.Errorf("SEV0 divergence did not pause the run")
			}
			t.Logf("%s", a.Message)
		})
	}
}

// TestDivergenceOnEvalEvent: a val_loss recorded as an eval event (as
// kestrel's trainer reports it) is checked against ln V too.
func TestDivergenceOnEvalEvent(t *testing.T) {
	m, err := New(testConfig(), Options{RunDir: t.TempDir(), Logger: quietLogger(), Vocab: 256})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	as := m.Record(Event{Kind: EventEval, Step: 100, OK: true, Values: map[string]float64{"val_loss": 12.06}})
	if len(as) != 1 || as[0].Rule != RuleDivergence || as[0].Severity != SEV0 {
		t.Fatalf("alerts %+v, want one SEV0 divergence", as)
	}
	if p, _ := m.Paused(); !p {
		t.Errorf("not paused")
	}
}
