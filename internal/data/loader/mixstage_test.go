package loader

import (
	"testing"

	"github.com/kestrel-lm/kestrel/internal/datasrc"
)

var _ datasrc.MixStager = (*Loader)(nil)

// TestMixStage: the stage in force and the ramp's progress at the edges of
// each of rampConfig's stages (ReportBase 1: start_step 21 is step index
// 20): data.sources before the first, a ramp's interpolated steps with
// (j+1)/ramp_steps, 0 from the step its weights are in force, a switch.
func TestMixStage(t *testing.T) {
	l := mustNew(t, synthDataset(200000, 100000, 50000), rampConfig(), Options{ReportBase: 1, SeqLen: 8})
	cases := []struct {
		step  int
		entry int
		ramp  float64
	}{
		{0, 0, 0}, {19, 0, 0},
		{20, 1, 0.1}, {24, 1, 0.5}, {28, 1, 0.9}, {29, 1, 0}, {39, 1, 0}, // ramp over 10: steps 21..29 interpolate, 30 is in force
		{40, 2, 1.0 / 40}, {78, 2, 39.0 / 40}, {79, 2, 0}, {99, 2, 0},
		{100, 3, 0}, {150, 3, 0}, // a switch: no ramp
	}
	for _, c := range cases {
		if e, r := l.MixStage(c.step); e != c.entry || r != c.ramp {
			t.Errorf("MixStage(%d) = %d, %v; want %d, %v", c.step, e, r, c.entry, c.ramp)
		}
	}
}

// TestMixStageFirstStep: a stage at the first step after the first one
// (start_step 2, the earliest the loader takes) ramps from step index 1;
// without stages every step is entry 0.
func TestMixStageFirstStep(t *testing.T) {
	c := rampConfig()
	c.Stages = []Stage{{StartStep: 2, RampSteps: 2, Weights: map[string]float64{"src1": 1}}}
	l := mustNew(t, synthDataset(200000, 100000, 50000), c, Options{ReportBase: 1, SeqLen: 8})
	for _, w := range []struct {
		step, entry int
		ramp        float64
	}{{0, 0, 0}, {1, 1, 0.5}, {2, 1, 0}, {9, 1, 0}} {
		if e, r := l.MixStage(w.step); e != w.entry || r != w.ramp {
			t.Errorf("stage at 2: MixStage(%d) = %d, %v; want %d, %v", w.step, e, r, w.entry, w.ramp)
		}
	}
	c.Stages = nil
	l = mustNew(t, synthDataset(200000, 100000, 50000), c, Options{ReportBase: 1, SeqLen: 8})
	for _, step := range []int{0, 1, 500} {
		if e, r := l.MixStage(step); e != 0 || r != 0 {
			t.Errorf("no stages: MixStage(%d) = %d, %v; want 0, 0", step, e, r)
		}
	}
}
