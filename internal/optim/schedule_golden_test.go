package optim

import (
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"
)

var updateScheduleGolden = flag.Bool("update-schedule-golden", false, "rewrite testdata/schedule_golden.json from the current At()")

// goldenSchedules are the schedules of the configs that existed before
// [[optim.phases]] and optim.warmup_fraction: every optim.schedule kind,
// each decay shape, re-warmup cycles, odd sizes (warm-up longer than the
// run, a cycle shorter than its warm-up, a one-step run).
func goldenSchedules() []struct {
	Name  string
	Total int
	Cfg   Config
} {
	base := DefaultConfig()
	base.LR, base.MinLR, base.Warmup = 3e-3, 3e-4, 17
	type gs = struct {
		Name  string
		Total int
		Cfg   Config
	}
	mod := func(name string, total int, f func(*Config)) gs {
		c := base
		f(&c)
		return gs{name, total, c}
	}
	return []gs{
		mod("default", 301, func(c *Config) { *c = DefaultConfig() }),
		mod("cosine", 257, func(c *Config) { c.Schedule = "cosine" }),
		mod("cosine-no-warmup", 64, func(c *Config) { c.Schedule, c.Warmup = "cosine", 0 }),
		mod("cosine-warmup-longer-than-run", 9, func(c *Config) { c.Schedule = "cosine" }),
		mod("cosine-one-step", 1, func(c *Config) { c.Schedule = "cosine" }),
		mod("constant", 100, func(c *Config) { c.Schedule = "constant" }),
		mod("wsd-linear", 233, func(c *Config) { c.Schedule = "wsd" }),
		mod("wsd-1-sqrt", 233, func(c *Config) { c.Schedule, c.DecayShape, c.DecayFraction = "wsd", "1-sqrt", 0.37 }),
		mod("wsd-cosine", 233, func(c *Config) { c.Schedule, c.DecayShape = "wsd", "cosine" }),
		mod("wsd-no-decay", 50, func(c *Config) { c.Schedule, c.DecayFraction = "wsd", 0 }),
		mod("wsd-s", 250, func(c *Config) { c.Schedule, c.WSDSPeriod, c.WSDSDecaySteps = "wsd-s", 40, 7 }),
		mod("wsd-s-1-sqrt", 250, func(c *Config) { c.Schedule, c.WSDSPeriod, c.WSDSDecaySteps, c.DecayShape = "wsd-s", 33, 33, "1-sqrt" }),
		mod("multistep", 211, func(c *Config) { c.Schedule = "multistep" }),
		mod("multistep-3", 97, func(c *Config) {
			c.Schedule, c.MultistepAt, c.MultistepFactors = "multistep", []float64{0.5, 0.7, 0.95}, []float64{0.5, 0.25, 0.01}
		}),
		mod("rewarm-constant", 200, func(c *Config) { c.Schedule, c.RewarmAt, c.RewarmSteps = "constant", []int{60, 150}, 5 }),
		mod("rewarm-wsd", 220, func(c *Config) { c.Schedule, c.RewarmAt, c.RewarmSteps = "wsd", []int{100}, 20 }),
		mod("rewarm-cosine-beyond", 120, func(c *Config) { c.Schedule, c.RewarmAt, c.RewarmSteps = "cosine", []int{90, 118, 500}, 30 }),
		mod("rewarm-wsd-s", 300, func(c *Config) {
			c.Schedule, c.WSDSPeriod, c.WSDSDecaySteps, c.RewarmAt, c.RewarmSteps = "wsd-s", 50, 10, []int{130}, 9
		}),
		mod("rewarm-multistep", 160, func(c *Config) { c.Schedule, c.RewarmAt, c.RewarmSteps = "multistep", []int{80}, 0 }),
	}
}

// goldenPoint is one step of a golden schedule: the LR's bits as hex (the
// comparison is exact), the phase and the cycle.
type goldenPoint struct {
	LR    string `json:"lr"`
	Phase string `json:"phase"`
	Cycle int    `json:"cycle"`
}

func pointsOf(t *testing.T, cfg Config, total int) []goldenPoint {
	t.Helper()
	s, err := NewSchedule(cfg, total)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]goldenPoint, total)
	for i := range out {
		p := s.At(i)
		out[i] = goldenPoint{fmt.Sprintf("%016x", math.Float64bits(p.LR)), p.Phase, p.Cycle}
	}
	return out
}

// TestScheduleGolden: every schedule a config could describe before
// [[optim.phases]] existed gives, at every step, the bit-identical LR, the
// phase and the cycle it gave then (testdata/schedule_golden.json, written
// by the At() of commit 8ff89ad with -update-schedule-golden).
func TestScheduleGolden(t *testing.T) {
	path := filepath.Join("testdata", "schedule_golden.json")
	got := map[string][]goldenPoint{}
	for _, g := range goldenSchedules() {
		got[g.Name] = pointsOf(t, g.Cfg, g.Total)
	}
	if *updateScheduleGolden {
		b, err := json.Marshal(got)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var want map[string][]goldenPoint
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if len(want) != len(got) {
		t.Errorf("%s holds %d schedules, the test %d", path, len(want), len(got))
	}
	for name, w := range want {
		g := got[name]
		if len(g) != len(w) {
			t.Errorf("%s: %d steps, golden %d", name, len(g), len(w))
			continue
		}
		for i := range w {
			if g[i] != w[i] {
				t.Errorf("%s step index %d: got %+v, golden %+v", name, i, g[i], w[i])
				break
			}
		}
	}
}
