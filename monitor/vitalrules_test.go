package monitor

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

const mib = 1 << 20

// vitalsRun feeds n steps of a healthy curve, with the vitals mutate
// sets, to a fresh monitor and returns the alerts of rule.
func vitalsRun(t *testing.T, cfg Config, from, n int64, mutate func(s int64, v map[string]float64)) []Alert {
	t.Helper()
	m := newTestMonitor(t, cfg, t.TempDir())
	c := newCurve(3)
	var got []Alert
	for s := from; s < from+n; s++ {
		smp := c.sample(s)
		mutate(s, smp.Values)
		got = append(got, m.Observe(smp)...)
	}
	return got
}

func vitalsConfig() Config {
	c := testConfig()
	c.MemoryCreepWindow = 80
	c.MemoryCreepMB = 64
	return c
}

// healthyMemory is a process that allocates its arenas over its first
// steps, then holds its anonymous memory within ±2 MiB (the garbage
// collector's cycles) while the memory-mapped data it reads grows its
// file-backed pages steadily.
func healthyMemory(rng *rand.Rand) func(s int64, v map[string]float64) {
	return func(s int64, v map[string]float64) {
		anon := 300.0*mib + 2*mib*rng.NormFloat64()
		if s < 5 {
			anon = float64(s) * 60 * mib
		}
		file := 20*mib + float64(s)*1*mib // mmap pages touched: not a leak
		v["rss_bytes"], v["rss_file_bytes"], v["go_heap_bytes"] = anon+file, file, 200*mib+mib*rng.NormFloat64()
	}
}

func TestMemoryCreep(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	healthy := healthyMemory(rng)
	cases := []struct {
		name   string
		from   int64 // first step of the invocation (a resume starts later)
		mutate func(s int64, v map[string]float64)
		fire   bool
	}{
		{"healthy: arenas at start, flat anon, growing mmap", 1, healthy, false},
		{"healthy resume: the new process allocates again", 5001, healthy, false},
		{"one jump (a buffer allocated once)", 1, func(s int64, v map[string]float64) {
			healthy(s, v)
			if s >= 120 {
				v["rss_bytes"] += 400 * mib
			}
		}, false},
		{"leak of 2 MiB a step from step 60", 1, func(s int64, v map[string]float64) {
			healthy(s, v)
			if s >= 60 {
				v["rss_bytes"] += float64(s-60) * 2 * mib
				v["go_heap_bytes"] += float64(s-60) * 2 * mib
			}
		}, true},
		{"slow growth below memory_creep_mb", 1, func(s int64, v map[string]float64) {
			healthy(s, v)
			v["rss_bytes"] += float64(s) * 0.2 * mib
		}, false},
		{"leak on a machine without rss_file_bytes", 1, func(s int64, v map[string]float64) {
			v["rss_bytes"] = 300*mib + float64(s)*3*mib
		}, true},
		// The demo's healthy shape (measured: rss 530 → 890 MiB over 400
		// steps, live heap flat at ~430 MiB): the heap fills towards its
		// GC goal inside what the runtime holds from the OS.
		{"heap filling towards its GC goal", 1, func(s int64, v map[string]float64) {
			healthy(s, v)
			v["rss_bytes"] += float64(s) * 2 * mib
			v["go_mapped_bytes"] = v["rss_bytes"] - v["rss_file_bytes"] - 30*mib
		}, false},
		{"leak of Go objects, the runtime's memory growing with it", 1, func(s int64, v map[string]float64) {
			healthy(s, v)
			v["rss_bytes"] += float64(s) * 2 * mib
			v["go_heap_bytes"] += float64(s/20*20) * 2 * mib // the live heap moves at each collection
			v["go_mapped_bytes"] = v["rss_bytes"] - v["rss_file_bytes"] - 30*mib
		}, true},
		{"leak outside Go (mmap, cgo): the runtime's memory flat", 1, func(s int64, v map[string]float64) {
			healthy(s, v)
			v["rss_bytes"] += float64(s) * 2 * mib
			v["go_mapped_bytes"] = 200 * mib
		}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := only(vitalsRun(t, vitalsConfig(), tc.from, 200, tc.mutate), RuleMemoryCreep)
			if tc.fire != (len(got) > 0) {
				t.Fatalf("fired %d memory_creep alerts, want fire=%v: %+v", len(got), tc.fire, got)
			}
			if tc.fire && (got[0].Severity != SEV1 || !strings.Contains(got[0].Message, "MiB over the last 80 steps")) {
				t.Errorf("alert %+v", got[0])
			}
		})
	}
}

// TestMemoryCreepQuietAfterRollback: the steps going back restart the
// warm-up, so a rollback's re-allocation is no creep.
func TestMemoryCreepQuietAfterRollback(t *testing.T) {
	m := newTestMonitor(t, vitalsConfig(), t.TempDir())
	c := newCurve(4)
	feed := func(from, to int64, base float64) []Alert {
		var out []Alert
		for s := from; s <= to; s++ {
			smp := c.sample(s)
			rss := base
			if s-from < 8 { // the restored state is allocated over a few steps
				rss = base + float64(s-from)*40*mib
			} else {
				rss = base + 320*mib
			}
			smp.Values["rss_bytes"] = rss
			out = append(out, m.Observe(smp)...)
		}
		return out
	}
	got := feed(1, 150, 300*mib)
	got = append(got, feed(101, 250, 700*mib)...) // rolled back to step 100, in the same process
	if a := only(got, RuleMemoryCreep); len(a) > 0 {
		t.Fatalf("memory_creep after a rollback: %+v", a)
	}
}

func TestOptStateNonFinite(t *testing.T) {
	for _, tc := range []struct {
		name string
		v    float64
		fire bool
	}{{"finite", 1, false}, {"non-finite from step 150", 0, true}} {
		t.Run(tc.name, func(t *testing.T) {
			got := only(vitalsRun(t, testConfig(), 1, 200, func(s int64, v map[string]float64) {
				v["opt_state_finite"] = 1
				if s >= 150 {
					v["opt_state_finite"] = tc.v
				}
			}), RuleOptStateNonFin)
			if tc.fire != (len(got) > 0) {
				t.Fatalf("alerts %+v, want fire=%v", got, tc.fire)
			}
			if tc.fire && (got[0].Severity != SEV0 || got[0].Step != 150) {
				t.Errorf("alert %+v, want SEV0 at step 150", got[0])
			}
		})
	}
}

func TestCheckpointSizeJumpAndFailure(t *testing.T) {
	const base = 84 * mib
	cases := []struct {
		name  string
		sizes []float64
		ok    []float64 // checkpoint_ok per checkpoint (nil: all 1)
		rule  string
		fire  bool
	}{
		{"same tensors, state.json grows a little", []float64{base, base + 900, base + 1800, base + 2000, base + 2100}, nil, RuleCheckpointSize, false},
		{"first checkpoint has no reference", []float64{3 * base}, nil, RuleCheckpointSize, false},
		{"twice as large", []float64{base, base, base, 2 * base}, nil, RuleCheckpointSize, true},
		{"truncated to a third", []float64{base, base, base / 3}, nil, RuleCheckpointSize, true},
		{"verification failed", []float64{base, base}, []float64{1, 0}, RuleCheckpointFailed, true},
		{"verified", []float64{base, base}, []float64{1, 1}, RuleCheckpointFailed, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := newTestMonitor(t, testConfig(), t.TempDir())
			var got []Alert
			for i, sz := range tc.sizes {
				v := map[string]float64{"checkpoint_size": sz, "checkpoint_ok": 1, "checkpoint_time": 0.5}
				if tc.ok != nil {
					v["checkpoint_ok"] = tc.ok[i]
				}
				got = append(got, m.Record(Event{Kind: EventCheckpoint, Step: int64(100 * (i + 1)), OK: true, Values: v})...)
			}
			a := only(got, tc.rule)
			if tc.fire != (len(a) > 0) {
				t.Fatalf("alerts %+v, want %s fire=%v", got, tc.rule, tc.fire)
			}
			if tc.fire && a[0].Step != int64(100*len(tc.sizes)) {
				t.Errorf("fired at step %d, want the last checkpoint's", a[0].Step)
			}
		})
	}
}

// cooldownRun is a run of 400 steps whose LR warms up for 20 steps, holds,
// and decays linearly to 0 from decayFrom, with lm_head_norm given by
// head.
func cooldownRun(decayFrom int64, head func(s int64, lr float64) float64) func(s int64, v map[string]float64) {
	return func(s int64, v map[string]float64) {
		lr := 1e-3
		switch {
		case s < 20:
			lr = 1e-3 * float64(s) / 20
		case s >= decayFrom:
			lr = 1e-3 * math.Max(0, float64(400-s)/float64(400-decayFrom))
		}
		v["learning_rate"], v["lm_head_norm"] = lr, head(s, lr)
	}
}

func TestLMHeadGrowth(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	// A healthy head grows like √steps while the LR is high and levels off
	// as it decays.
	healthy := func(s int64, lr float64) float64 {
		return 20 + 3*math.Sqrt(float64(s)) + 0.02*rng.NormFloat64()
	}
	cases := []struct {
		name string
		run  func(s int64, v map[string]float64)
		fire bool
	}{
		{"healthy: growth slows in the cooldown", cooldownRun(200, healthy), false},
		{"fast growth that slows with the LR (a head that grows with each update)", cooldownRun(200, func() func(int64, float64) float64 {
			sum := 0.0
			return func(s int64, lr float64) float64 {
				sum += lr / 1e-3
				return math.Max(1, sum-200) // 20% a window late in the cooldown, slowing
			}
		}()), false},
		{"fast growth at the peak LR is not the cooldown", cooldownRun(390, func(s int64, lr float64) float64 { return 20 + 0.2*float64(s) }), false},
		{"lm_head grows 0.4% a step late in the cooldown", cooldownRun(200, func(s int64, lr float64) float64 {
			x := healthy(s, lr)
			if s > 300 {
				x *= 1 + 0.004*float64(s-300)
			}
			return x
		}), true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := only(vitalsRun(t, testConfig(), 1, 400, tc.run), RuleLMHeadGrowth)
			if tc.fire != (len(got) > 0) {
				t.Fatalf("alerts %+v, want fire=%v", got, tc.fire)
			}
			if tc.fire && (got[0].Severity != SEV2 || got[0].Step <= 300) {
				t.Errorf("alert %+v, want SEV2 after step 300", got[0])
			}
		})
	}
}

func TestVitalsConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  func(c *Config)
		want string
	}{
		{"window too short", func(c *Config) { c.MemoryCreepWindow = 4 }, "memory_creep_window"},
		{"negative mb", func(c *Config) { c.MemoryCreepMB = -1 }, "memory_creep_mb"},
		{"size factor 1", func(c *Config) { c.CheckpointSizeFactor = 1 }, "checkpoint_size_factor"},
		{"NaN growth", func(c *Config) { c.LMHeadGrowth = math.NaN() }, "lm_head_growth"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			tc.set(&c)
			if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate = %v, want an error naming %s", err, tc.want)
			}
		})
	}
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatal(err)
	}
}
