package monitor

import (
	"strings"
	"testing"
	"time"

	"github.com/kestrel-lm/kestrel/internal/runlog"
)

// demoEvals are the val_loss of a healthy `kestrel demo --quick` run
// (evaluations every 50 steps, its data stage from step 161).
var demoEvals = []float64{6.938, 6.388, 5.988, 5.786}

func valSeries(vals []float64) func() []map[string]float64 {
	return func() []map[string]float64 {
		var out []map[string]float64
		for _, v := range vals {
			out = append(out, map[string]float64{"val_loss": v})
		}
		return out
	}
}

// TestValLossJump: one evaluation far above the ones before it is the
// SEV2 val_loss_jump, through the trainer's eval events and kestrel
// watch; the shipped healthy runs, slow overfitting, a jump right after a
// data stage's start and noise are not.
func TestValLossJump(t *testing.T) {
	stages := []MixStage{{StartStep: 1, Weights: map[string]float64{"web": 1}}, {StartStep: 110, Weights: map[string]float64{"web": 0.5, "math": 0.5}}}
	demoStages := []MixStage{{StartStep: 1, Weights: map[string]float64{"books": 0.2, "wiki": 0.25, "web": 0.05, "math": 0.25, "code": 0.25}}, {StartStep: 161, Weights: map[string]float64{"books": 0.3, "wiki": 0.3, "web": 0.05, "math": 0.3, "code": 0.05}}}
	jumped := func(at int, by float64, vals []float64) []float64 {
		out := append([]float64(nil), vals...)
		out[at] += by
		return out
	}
	sc := make([]float64, len(scEvals))
	for i, e := range scEvals {
		sc[i] = e[0]
	}
	cases := []struct {
		name   string
		stages []MixStage
		vals   []float64
		want   int64 // step of the alert; 0 = none
	}{
		{"healthy shakespeare-char", nil, sc, 0},
		{"healthy demo --quick", nil, demoEvals, 0},
		{"healthy demo --quick with its stage", demoStages, demoEvals, 0},
		{"shakespeare-char, one eval +0.3", nil, jumped(5, 0.3, sc), 300},
		{"demo, the third eval 0.5 above the second", nil, []float64{6.938, 6.388, 6.888}, 150},
		{"demo, 0.25 above is within 5% of 6.388", nil, []float64{6.938, 6.388, 6.638}, 0},
		{"slow overfitting (+0.03 an eval)", nil, []float64{1.70, 1.73, 1.76, 1.79, 1.82, 1.85}, 0},
		{"noise (±0.04)", nil, []float64{1.70, 1.74, 1.69, 1.73, 1.70, 1.74}, 0},
		{"jump at the eval after a stage start", stages, []float64{6.938, 6.388, 6.888}, 0},
		{"jump two evals after a stage start", stages, []float64{6.938, 6.388, 5.988, 6.6}, 200},
	}
	for _, tc := range cases {
		for _, path := range []string{"events", "watch"} {
			t.Run(tc.name+"/"+path, func(t *testing.T) {
				m := newOptsMonitor(t, quietConfig(), Options{MixStages: tc.stages})
				fired := only(evalSeries(m, path, valSeries(tc.vals)(), 50), RuleValJump)
				if tc.want == 0 {
					if len(fired) > 0 {
						t.Fatalf("val_loss_jump fired: %+v", fired)
					}
					return
				}
				if len(fired) != 1 || fired[0].Step != tc.want || fired[0].Severity != SEV2 || !strings.Contains(fired[0].Message, "val_ppl") || !strings.Contains(fired[0].Runbook, "Contain:") {
					t.Fatalf("val_loss_jump %+v, want one SEV2 at step %d", fired, tc.want)
				}
			})
		}
	}
}

// TestRestartStorm: restart_storm_starts starts within
// restart_storm_minutes are a SEV2 restart_storm; the same starts spread
// over days, fewer starts, and unparsable times are not.
func TestRestartStorm(t *testing.T) {
	at := func(mins ...float64) []runlog.Start {
		var out []runlog.Start
		for i, m := range mins {
			out = append(out, runlog.Start{Time: t0.Add(time.Duration(m * float64(time.Minute))).Format(time.RFC3339), Step: 100 * i})
		}
		return out
	}
	cases := []struct {
		name   string
		starts []runlog.Start
		want   bool
	}{
		{"one start (a healthy run)", at(0), false},
		{"a resume a day", at(0, 1440, 2880, 4320, 5760), false},
		{"5 starts in 20 minutes", at(0, 5, 10, 15, 20), true},
		{"4 starts in 20 minutes", at(0, 5, 10, 20), false},
		{"5 starts, the first 2 hours before", at(-120, 5, 10, 15, 20), false},
		{"crash loop after a day of training", at(0, 1440, 1441, 1442, 1443, 1444), true},
		{"unparsable times", []runlog.Start{{Time: "x"}, {Time: "y"}, {Time: "z"}, {Time: "w"}, {Time: "v"}}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := newOptsMonitor(t, quietConfig(), Options{})
			got := m.Starts(700, tc.starts)
			if (len(got) > 0) != tc.want {
				t.Fatalf("restart_storm %+v, want %v", got, tc.want)
			}
			if tc.want && (got[0].Rule != RuleRestartStorm || got[0].Severity != SEV2 || got[0].Step != 700 || !strings.Contains(got[0].Message, "5 starts within")) {
				t.Errorf("alert %+v", got[0])
			}
		})
	}
}

// TestSpikeKnowsPlannedChanges: a train loss that steps up by 25% at a
// data stage's start_step, or rises while the LR re-warms after a decay
// (a ramp read from learning_rate, or a new lr_cycle), is no loss_spike;
// the same step up with no stage, 49 steps before one, or with an LR that
// jumps ×10 at once (an LR spike, not a ramp), is one.
func TestSpikeKnowsPlannedChanges(t *testing.T) {
	type lrFn func(s int64) (lr, cycle float64)
	decay := func(s int64) float64 { return 1e-3 * (1 - float64(min(s, 150))/200) } // 2.5e-4 at step 150
	flat := func(s int64) (float64, float64) { return decay(s), 0 }
	ramp := func(s int64) (float64, float64) {
		if s <= 150 {
			return decay(s), 0
		}
		return 2.5e-4 + 7.5e-4*float64(min(s-150, 20))/20, 1 // re-warm to 1e-3 over 20 steps
	}
	jumpCycle := func(s int64) (float64, float64) { // the schedule's new cycle from min_lr 0
		if s <= 150 {
			return decay(s), 0
		}
		return 1e-3, 1
	}
	spike := func(s int64) (float64, float64) { // ×10 for 3 steps, no new cycle
		if s > 150 && s <= 153 {
			return 10 * decay(s), 0
		}
		return decay(s), 0
	}
	run := func(stages []MixStage, lrOf lrFn) []Alert {
		m := newOptsMonitor(t, testConfig(), Options{MixStages: stages})
		c := newCurve(6)
		var got []Alert
		for s := int64(1); s <= 260; s++ {
			smp := c.sample(s)
			smp.Values["learning_rate"], smp.Values["lr_cycle"] = lrOf(s)
			if s > 150 {
				smp.Values["train_loss_raw"] *= 1.25
			}
			got = append(got, only(m.Observe(smp), RuleLossSpike)...)
		}
		return got
	}
	stages := []MixStage{{StartStep: 1, Weights: map[string]float64{"web": 1}}, {StartStep: 151, Weights: map[string]float64{"web": 0.5, "math": 0.5}}}
	later := []MixStage{stages[0], {StartStep: 200, Weights: stages[1].Weights}}
	cases := []struct {
		name   string
		stages []MixStage
		lr     lrFn
		want   bool
	}{
		{"a data stage's level change", stages, flat, false},
		{"a re-warm-up ramp", nil, ramp, false},
		{"a new lr_cycle", nil, jumpCycle, false},
		{"the same jump unplanned", nil, flat, true},
		{"a jump 49 steps before a stage", later, flat, true},
		{"an LR spike ×10", nil, spike, true},
	}
	for _, tc := range cases {
		got := run(tc.stages, tc.lr)
		if tc.want && (len(got) == 0 || got[0].Step != 151) {
			t.Errorf("%s: loss_spike %+v, want one at step 151", tc.name, got)
		}
		if !tc.want && len(got) != 0 {
			t.Errorf("%s: raised %+v", tc.name, got)
		}
	}
}
