package optim

import (
	"math"
	"strings"
	"testing"
)

// TestPhases: each phase kind at its first step, inside its ramp, at the
// end of the ramp and after it, starting from the LR in force at the step
// before (mid-decay, mid-warm-up, after another phase).
func TestPhases(t *testing.T) {
	base := DefaultConfig()
	base.LR, base.MinLR, base.Warmup, base.Schedule = 1.0, 0.1, 10, "constant"
	type pt struct {
		step  int // 0-based index
		lr    float64
		phase string
		cycle int
	}
	cosAt := func(i int) float64 { // the base cosine of 110 steps, warm-up 10
		return 0.1 + 0.45*(1+math.Cos(math.Pi*float64(i-10)/99))
	}
	cases := []struct {
		name  string
		mod   func(*Config)
		total int
		pts   []pt
	}{
		// rewarm at metrics step 41 (index 40) from the LR in force (0.1 after a decay phase) to 2 over 4 steps.
		{"decay-then-rewarm-current", func(c *Config) {
			c.Phases = []Phase{{Step: 21, Kind: "decay", Steps: 10}, {Step: 41, Kind: "rewarm", Peak: fp(2), Steps: 4}}
		}, 60, []pt{
			{19, 1, "constant", 0}, {20, 1 - 0.9/10, "decay", 0}, {29, 0.1, "decay", 0}, {39, 0.1, "decay", 0},
			{40, 0.1 + 1.9/5, "rewarm", 1}, {43, 0.1 + 1.9*4/5, "rewarm", 1}, {44, 2, "stable", 1}, {59, 2, "stable", 1}}},
		{"rewarm-from-min-lr-default-peak", func(c *Config) {
			c.Phases = []Phase{{Step: 31, Kind: "rewarm", From: "min_lr", Steps: 2}}
		}, 40, []pt{{29, 1, "constant", 0}, {30, 0.1 + 0.9/3, "rewarm", 1}, {31, 0.1 + 0.9*2/3, "rewarm", 1}, {32, 1, "stable", 1}}},
		// A decay phase in the middle of the warm-up starts from the warm-up's LR at the step before.
		{"decay-from-warmup-cosine-to", func(c *Config) {
			c.Phases = []Phase{{Step: 6, Kind: "decay", Steps: 4, Shape: "cosine", To: fp(0)}}
		}, 20, []pt{{4, 5.0 / 11, "warmup", 0}, {5, 0.5 * 5.0 / 11 * (1 + math.Cos(math.Pi/4)), "decay", 0}, {8, 0, "decay", 0}, {19, 0, "decay", 0}}},
		{"hold-mid-cosine", func(c *Config) {
			c.Schedule = "cosine"
			c.Phases = []Phase{{Step: 61, Kind: "hold"}}
		}, 110, []pt{{59, cosAt(59), "decay", 0}, {60, cosAt(59), "hold", 0}, {109, cosAt(59), "hold", 0}}},
		// WSD-S from step 11 (period 10, decay 3), then its spacing changes at step 41 (period 5, decay 1, 1-sqrt).
		{"wsds-spacing-change", func(c *Config) {
			c.Schedule = "wsd-s"
			c.WSDSPeriod, c.WSDSDecaySteps = 10, 3
			c.Phases = []Phase{{Step: 41, Kind: "wsds", WSDSPeriod: 5, WSDSDecaySteps: 2, Shape: "1-sqrt"}}
		}, 60, []pt{{16, 1, "stable", 0}, {17, 1 - 0.9/3, "decay", 0}, {39, 0.1, "decay", 0},
			{40, 1, "stable", 0}, {42, 1, "stable", 0}, {43, 0.1 + 0.9*(1-math.Sqrt(0.5)), "decay", 0}, {44, 0.1, "decay", 0}, {45, 1, "stable", 0}}},
		// wsds after a rewarm takes that rewarm's peak.
		{"rewarm-then-wsds-peak", func(c *Config) {
			c.Phases = []Phase{{Step: 21, Kind: "rewarm", Peak: fp(0.5), Steps: 1}, {Step: 31, Kind: "wsds", WSDSPeriod: 4, WSDSDecaySteps: 1, To: fp(0.05)}}
		}, 40, []pt{{20, 0.75, "rewarm", 1}, {21, 0.5, "stable", 1}, {30, 0.5, "stable", 1}, {33, 0.05, "decay", 1}, {34, 0.5, "stable", 1}}},
		// Phases after old-style rewarm_at cycles keep counting cycles.
		{"rewarm-at-then-rewarm-phase", func(c *Config) {
			c.RewarmAt, c.RewarmSteps = []int{20}, 4
			c.Phases = []Phase{{Step: 41, Kind: "rewarm", Steps: 3, Peak: fp(1)}}
		}, 50, []pt{{20, 0.2, "rewarm", 1}, {39, 1, "constant", 1}, {40, 1, "rewarm", 2}, {43, 1, "stable", 2}}},
		// A phase at the run's last step.
		{"phase-at-last-step", func(c *Config) { c.Phases = []Phase{{Step: 30, Kind: "decay", Steps: 1}} }, 30,
			[]pt{{28, 1, "constant", 0}, {29, 0.1, "decay", 0}}},
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
			if !near(got.LR, p.lr) || got.Phase != p.phase || got.Cycle != p.cycle {
				t.Errorf("%s index %d: got %.9g %s cycle %d, want %.9g %s cycle %d", c.name, p.step, got.LR, got.Phase, got.Cycle, p.lr, p.phase, p.cycle)
			}
		}
	}
}

// TestPhasesLeaveThePastAlone: adding a phase at step s changes no LR
// before s, bit for bit, for every schedule kind of the golden.
func TestPhasesLeaveThePastAlone(t *testing.T) {
	for _, g := range goldenSchedules() {
		if g.Total < 20 {
			continue
		}
		s := g.Total / 2
		for _, ph := range []Phase{{Step: s, Kind: "hold"}, {Step: s, Kind: "rewarm", Steps: 3}, {Step: s, Kind: "decay", Steps: 5},
			{Step: s, Kind: "wsds", WSDSPeriod: 7, WSDSDecaySteps: 2}} {
			cfg := g.Cfg
			if len(cfg.RewarmAt) > 0 && cfg.RewarmAt[len(cfg.RewarmAt)-1] >= s-1 {
				continue
			}
			cfg.Phases = []Phase{ph}
			old, with := pointsOf(t, g.Cfg, g.Total), pointsOf(t, cfg, g.Total)
			for i := 0; i < s-1; i++ {
				if old[i] != with[i] {
					t.Fatalf("%s + %s at %d: index %d changed %+v → %+v", g.Name, ph.Kind, s, i, old[i], with[i])
				}
			}
			if ph.Kind == "hold" && (with[s-1].LR != old[s-2].LR || with[s-1].Phase != "hold") {
				t.Errorf("%s: hold at %d gives %+v, want the LR %s of the step before", g.Name, s, with[s-1], old[s-2].LR)
			}
		}
	}
}

// TestWarmupFraction: warm-up as a fraction of the run, and exactly one
// warm-up in force.
func TestWarmupFraction(t *testing.T) {
	c := DefaultConfig()
	c.LR, c.Warmup, c.WarmupFraction, c.Schedule = 1, 0, 0.01, "constant"
	s, err := NewSchedule(c, 1000)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []struct {
		i     int
		lr    float64
		phase string
	}{{0, 1.0 / 11, "warmup"}, {9, 10.0 / 11, "warmup"}, {10, 1, "constant"}} {
		if got := s.At(p.i); !near(got.LR, p.lr) || got.Phase != p.phase {
			t.Errorf("index %d: %+v, want %g %s", p.i, got, p.lr, p.phase)
		}
	}
	if w := c.WarmupSteps(250); w != 3 { // 2.5 rounds away from zero
		t.Errorf("WarmupSteps(250) = %d, want 3", w)
	}
	c.Warmup = 100
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "optim.warmup_fraction (0.01) and optim.warmup_steps (100) are both set") {
		t.Errorf("both set: %v", err)
	}
	c.Warmup, c.WarmupFraction = 0, 1
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "optim.warmup_fraction must be in [0, 1)") {
		t.Errorf("fraction 1: %v", err)
	}
}

// TestPhaseValidation: every bad entry is refused naming optim.phases[i]
// and its field.
func TestPhaseValidation(t *testing.T) {
	for _, c := range []struct {
		name   string
		phases []Phase
		want   string
	}{
		{"step-1", []Phase{{Step: 1, Kind: "hold"}}, "optim.phases[0].step must be >= 2"},
		{"order", []Phase{{Step: 50, Kind: "hold"}, {Step: 50, Kind: "hold"}}, "optim.phases[1].step must be after optim.phases[0].step (50)"},
		{"overlap", []Phase{{Step: 50, Kind: "rewarm", Steps: 20}, {Step: 60, Kind: "decay", Steps: 5}}, "optim.phases[1].step (60) overlaps optim.phases[0] (rewarm over steps 50..69)"},
		{"kind", []Phase{{Step: 5, Kind: "cosine"}}, `optim.phases[0].kind "cosine" is not a phase`},
		{"peak-below-min", []Phase{{Step: 5, Kind: "rewarm", Steps: 2, Peak: fp(1e-5)}}, "optim.phases[0].peak (1e-05) is below optim.min_lr (0.0001)"},
		{"peak-nan", []Phase{{Step: 5, Kind: "rewarm", Steps: 2, Peak: fp(math.NaN())}}, "optim.phases[0].peak must be a finite number > 0"},
		{"peak-on-decay", []Phase{{Step: 5, Kind: "decay", Steps: 2, Peak: fp(1)}}, `optim.phases[0].peak is for kind = "rewarm" or "wsds" only`},
		{"from", []Phase{{Step: 5, Kind: "rewarm", Steps: 2, From: "zero"}}, `optim.phases[0].from "zero": want current`},
		{"from-on-hold", []Phase{{Step: 5, Kind: "hold", From: "min_lr"}}, `optim.phases[0].from is for kind = "rewarm" only`},
		{"no-steps", []Phase{{Step: 5, Kind: "decay"}}, `optim.phases[0].steps must be >= 1 for kind = "decay"`},
		{"steps-on-hold", []Phase{{Step: 5, Kind: "hold", Steps: 3}}, `optim.phases[0].steps is for kind = "rewarm" or "decay" only`},
		{"shape", []Phase{{Step: 5, Kind: "decay", Steps: 3, Shape: "exp"}}, `optim.phases[0].shape "exp"`},
		{"to-negative", []Phase{{Step: 5, Kind: "decay", Steps: 3, To: fp(-1)}}, "optim.phases[0].to must be a finite number >= 0"},
		{"wsds-period", []Phase{{Step: 5, Kind: "wsds", WSDSPeriod: 3, WSDSDecaySteps: 4}}, "optim.phases[0].wsds_period (3) and wsds_decay_steps (4) must be > 0"},
		{"period-on-decay", []Phase{{Step: 5, Kind: "decay", Steps: 1, WSDSPeriod: 3}}, `optim.phases[0].wsds_period and wsds_decay_steps are for kind = "wsds" only`},
	} {
		cfg := DefaultConfig()
		cfg.Phases = c.phases
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.name, err, c.want)
		}
	}
	cfg := DefaultConfig()
	cfg.RewarmAt, cfg.Phases = []int{80}, []Phase{{Step: 50, Kind: "hold"}}
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "optim.rewarm_at [80] re-warms at or after it") {
		t.Errorf("rewarm_at after a phase: %v", err)
	}
	cfg.RewarmAt = nil
	if _, err := NewSchedule(cfg, 40); err == nil || !strings.Contains(err.Error(), "optim.phases[0].step (50) is after the run's last step (train.steps = 40)") {
		t.Errorf("phase after the run: %v", err)
	}
	cfg.Phases = []Phase{{Step: 20, Kind: "rewarm", Steps: 5}, {Step: 25, Kind: "wsds", WSDSPeriod: 5, WSDSDecaySteps: 5}}
	if err := cfg.Validate(); err != nil {
		t.Errorf("a phase right after a ramp ends: %v", err)
	}
}

// TestCheckPhasesKeepPast: a rewind to step done may add phases from
// done+1 on; adding, changing or removing one at or before done is refused.
func TestCheckPhasesKeepPast(t *testing.T) {
	old := DefaultConfig()
	old.Phases = []Phase{{Step: 50, Kind: "decay", Steps: 10}}
	for _, c := range []struct {
		name   string
		phases []Phase
		done   int
		want   string
	}{
		{"append-next", []Phase{{Step: 50, Kind: "decay", Steps: 10}, {Step: 101, Kind: "rewarm", Steps: 5}}, 100, ""},
		{"change-future", []Phase{{Step: 50, Kind: "decay", Steps: 20}}, 49, ""},
		{"append-past", []Phase{{Step: 50, Kind: "decay", Steps: 10}, {Step: 100, Kind: "hold"}}, 100, "the entry at step 100 starts at or before the rewind point (step 100)"},
		{"change-past", []Phase{{Step: 50, Kind: "decay", Steps: 20}}, 50, "the entry at step 50 changed"},
		{"remove-past", nil, 70, "the entry at step 50 (decay) is gone"},
		{"insert-before", []Phase{{Step: 30, Kind: "hold"}, {Step: 50, Kind: "decay", Steps: 10}}, 70, "the entry at step 30 starts at or before the rewind point (step 70)"},
		{"replace-past", []Phase{{Step: 60, Kind: "hold"}}, 70, "the entry at step 50 (decay) is gone"},
	} {
		nw := old
		nw.Phases = c.phases
		err := CheckPhasesKeepPast(old, nw, c.done)
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s: got %v, want %q", c.name, err, c.want)
		}
	}
}
