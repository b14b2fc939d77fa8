package monitor

import (
	"strings"
	"testing"
)

// rampStages: a mixture from step 1, then a stage from step 161 ramping
// over 100 steps (its weights in force from step 260), in which code
// falls from 0.25 to 0.05.
var rampStages = []MixStage{
	{StartStep: 1, Weights: map[string]float64{"books": 0.2, "code": 0.25, "wiki": 0.55}},
	{StartStep: 161, RampSteps: 100, Weights: map[string]float64{"books": 3, "code": 0.5, "wiki": 6.5}}, // normalised: 0.3, 0.05, 0.65
}

// rampShares are the source_mix_share samples of a loader whose weights at
// step s are those of the schedule at step at(s), with a ±0.01 wobble.
func rampShares(s int64, at func(int64) int64) Sample {
	old := rampStages[0].Weights
	nw := map[string]float64{"books": 0.3, "code": 0.05, "wiki": 0.65}
	a := 0.0
	if r := at(s); r >= 161 {
		a = min(1, float64(r-161+1)/100)
	}
	v := map[string]float64{"train_loss_raw": 3}
	wob := 0.01
	if s%2 == 0 {
		wob = -0.01
	}
	for k := range old {
		x := (1-a)*old[k] + a*nw[k]
		if k == "books" {
			x += wob
		}
		if k == "wiki" {
			x -= wob
		}
		v["source_mix_share/"+k] = x
	}
	return Sample{Step: s, Values: v}
}

// TestMixDriftRamp: inside a data stage's ramp the mixture-drift rule
// judges each step against the interpolated target: a loader that follows
// the ramp is quiet through it, one that switches at once fires in the
// first steps of the ramp, one that ignores the ramp fires mid-ramp, and
// after a resume inside the ramp (the history given to Seed) a loader that
// goes on following is quiet while one that restarts the ramp fires.
func TestMixDriftRamp(t *testing.T) {
	same := func(s int64) int64 { return s }
	cases := []struct {
		name       string
		at         func(int64) int64
		resume     int64 // 0 = no resume; else Seed with steps 1..resume, then observe on
		after      func(int64) int64
		from, upto int64 // the first alert's step must lie in [from, upto]; from 0 = no alert
	}{
		{"follows the ramp", same, 0, nil, 0, 0},
		{"switches at once at the stage's start", func(s int64) int64 {
			if s >= 161 {
				return 1000
			}
			return s
		}, 0, nil, 162, 185},
		{"ignores the ramp until its end", func(s int64) int64 {
			if s < 260 {
				return 1
			}
			return s
		}, 0, nil, 200, 240},
		{"resumed mid-ramp, follows on", same, 210, same, 0, 0},
		{"resumed at the ramp's first step, follows on", same, 161, same, 0, 0},
		{"resumed mid-ramp, restarts the ramp", same, 210, func(s int64) int64 { return s - 49 }, 230, 250},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := newOptsMonitor(t, quietConfig(), Options{MixStages: rampStages})
			first := int64(1)
			if tc.resume > 0 {
				var hist []Sample
				for s := int64(1); s <= tc.resume; s++ {
					hist = append(hist, rampShares(s, tc.at))
				}
				m.Seed(hist)
				first, tc.at = tc.resume+1, tc.after
			}
			var got []Alert
			for s := first; s <= 320; s++ {
				got = append(got, only(m.Observe(rampShares(s, tc.at)), RuleMixDrift)...)
			}
			if tc.from == 0 {
				if len(got) > 0 {
					t.Fatalf("mixture_drift alerts %+v, want none", got)
				}
				return
			}
			if len(got) == 0 {
				t.Fatalf("no mixture_drift alert, want one in steps %d..%d", tc.from, tc.upto)
			}
			if a := got[0]; a.Step < tc.from || a.Step > tc.upto || a.Severity != SEV2 || !strings.Contains(a.Message, "ramping over 100 steps from step 161") {
				t.Fatalf("first alert %+v: want SEV2 in steps %d..%d naming the ramp", a, tc.from, tc.upto)
			}
		})
	}
}

// TestRampTargetFirstStage: a first stage with a ramp has no mixture
// before it in the schedule (data.sources not listed): its ramp steps are
// not judged, its weights are from the ramp's end on.
func TestRampTargetFirstStage(t *testing.T) {
	sc := newSchedule([]MixStage{{StartStep: 50, RampSteps: 10, Weights: map[string]float64{"a": 1, "b": 3}}})
	for _, tc := range []struct {
		step int64
		w    float64
		ok   bool
	}{{49, 0, false}, {50, 0, false}, {58, 0, false}, {59, 0.25, true}, {400, 0.25, true}} {
		if w, ok := sc.targetAt(tc.step, "a"); w != tc.w || ok != tc.ok {
			t.Errorf("targetAt(%d) = %v, %v; want %v, %v", tc.step, w, ok, tc.w, tc.ok)
		}
	}
	two := newSchedule([]MixStage{{StartStep: 1, Weights: map[string]float64{"a": 1}}, {StartStep: 50, RampSteps: 4, Weights: map[string]float64{"b": 1}}})
	for _, tc := range []struct {
		step int64
		a, b float64
	}{{49, 1, 0}, {50, 0.75, 0.25}, {51, 0.5, 0.5}, {52, 0.25, 0.75}, {53, 0, 1}} {
		a, _ := two.targetAt(tc.step, "a")
		b, _ := two.targetAt(tc.step, "b") // b enters at weight 0 → 1
		if a != tc.a || b != tc.b {
			t.Errorf("targetAt(%d) = a %v, b %v; want %v, %v", tc.step, a, b, tc.a, tc.b)
		}
	}
}
