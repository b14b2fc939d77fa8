package stepvitals

import (
	"math"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/batchsched"
	"github.com/kestrel-lm/kestrel/internal/datasrc"
	"github.com/kestrel-lm/kestrel/internal/optim"
	"github.com/kestrel-lm/kestrel/internal/runlog"
)

// TestOnTrackPhases: which steps the loss fit takes and which it judges,
// per schedule — never the warm-up, a re-warm-up or its settling; a WSD
// decay judged but not fitted; a cosine decay both.
func TestOnTrackPhases(t *testing.T) {
	type span struct {
		from, to   int // 1-based steps, inclusive
		fit, judge bool
	}
	for _, tc := range []struct {
		name  string
		mod   func(*runOpts)
		spans []span
	}{
		{"wsd", func(o *runOpts) { o.Optim.Schedule, o.Optim.Warmup, o.Optim.DecayFraction = "wsd", 10, 0.2 },
			[]span{{1, 19, false, false}, {20, 162, true, true}, {164, 200, false, true}}},
		{"cosine", func(o *runOpts) { o.Optim.Schedule, o.Optim.Warmup = "cosine", 30 },
			[]span{{1, 59, false, false}, {60, 200, true, true}}},
		{"constant, no warm-up", func(o *runOpts) { o.Optim.Schedule, o.Optim.Warmup = "constant", 0 },
			[]span{{1, 9, false, false}, {10, 200, true, true}}},
		{"multistep", func(o *runOpts) {
			o.Optim.Schedule, o.Optim.Warmup, o.Optim.MultistepAt, o.Optim.MultistepFactors = "multistep", 10, []float64{0.8}, []float64{0.3}
		}, []span{{20, 160, true, true}, {161, 200, false, true}}},
		{"re-warm-up at 100", func(o *runOpts) {
			o.Optim.Schedule, o.Optim.Warmup, o.Optim.RewarmAt, o.Optim.RewarmSteps = "constant", 10, []int{100}, 15
		}, []span{{20, 100, true, true}, {101, 130, false, false}, {131, 200, true, true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := baseOpts()
			o.Train.Steps = 200
			tc.mod(&o)
			sched, err := optim.NewSchedule(o.Optim, o.Train.Steps)
			if err != nil {
				t.Fatal(err)
			}
			k := NewOnTrack(o.Optim, o.Train.Steps, o.Data, sched, batchsched.Constant(4), 32)
			for _, sp := range tc.spans {
				for s := sp.from; s <= sp.to; s++ {
					if fit, judge := k.Phase(s); fit != sp.fit || judge != sp.judge {
						t.Fatalf("step %d (%s): fit %v judge %v, want %v %v", s, sched.At(s-1).Phase, fit, judge, sp.fit, sp.judge)
					}
				}
			}
		})
	}
}

// The planned end follows the batch schedule: 9 steps of 4 rows then 6
// rows from step 10, 32 tokens each.
func TestOnTrackPlannedTokens(t *testing.T) {
	o := baseOpts()
	o.Train.Steps = 20
	sched, err := optim.NewSchedule(o.Optim, o.Train.Steps)
	if err != nil {
		t.Fatal(err)
	}
	bs, err := batchsched.FromConfig("train.batch_schedule", [][]int{{1, 4}, {10, 6}}, 4)
	if err != nil {
		t.Fatal(err)
	}
	k := NewOnTrack(o.Optim, o.Train.Steps, o.Data, sched, bs, 32)
	if got, want := k.planned[20], int64((9*4+11*6)*32); got != want {
		t.Errorf("planned tokens %d, want %d", got, want)
	}
	if got, want := k.planned[9], int64(9*4*32); got != want {
		t.Errorf("after step 9: %d, want %d", got, want)
	}
}

// stagedSource switches its mixture at the 0-based step index at.
type stagedSource struct {
	datasrc.Source
	at int
}

func (s stagedSource) MixWeights(step int) []float64 {
	if step >= s.at {
		return []float64{0.3, 0.7}
	}
	return []float64{0.5, 0.5}
}

// A data stage switch starts the fit over: nothing fitted or judged for
// max(warm-up, 5% of the run, 10) steps after it, and no fit until the new
// stage has its own.
func TestOnTrackStageSwitchRestarts(t *testing.T) {
	o := baseOpts()
	o.Train.Steps = 400
	o.Optim.Schedule, o.Optim.Warmup = "constant", 10
	o.Data = stagedSource{Source: o.Data, at: 200} // step 201 trains on the new mixture
	sched, err := optim.NewSchedule(o.Optim, o.Train.Steps)
	if err != nil {
		t.Fatal(err)
	}
	k := NewOnTrack(o.Optim, o.Train.Steps, o.Data, sched, batchsched.Constant(4), 32)
	for s := 1; s <= 400; s++ {
		m := &runlog.Step{Step: s, TokensSeen: int64(128 * s), TokensComputed: int64(128 * s), TrainLossRaw: 1 + 3/math.Sqrt(float64(s))}
		if s > 200 {
			m.TrainLossRaw += 0.5 // a harder mixture
		}
		k.Observe(m)
		fit, judge := k.Phase(s)
		switch {
		case s == 200 && (m.OnTrack == nil || math.IsNaN(m.OnTrack.Residual)):
			t.Fatalf("step 200: %+v, want a judged fit before the switch", m.OnTrack)
		case s > 200 && s < 221 && (fit || judge || m.OnTrack != nil):
			t.Fatalf("step %d, just after the switch: fit %v judge %v reading %+v; want nothing", s, fit, judge, m.OnTrack)
		case s == 400 && (m.OnTrack == nil || m.OnTrack.ResidualZ > 4):
			t.Fatalf("step 400: %+v, want the new stage's own fit, on track", m.OnTrack)
		}
	}
}

// runOpts is what the fit reads of a run's options (internal/train's
// Options), with the trainer tests' optimizer settings (baseOpts there).
type runOpts struct {
	Optim optim.Config
	Train struct{ Steps int }
	Data  datasrc.Source
}

func baseOpts() runOpts {
	oc := optim.DefaultConfig()
	oc.LR, oc.Warmup = 3e-3, 2
	oc.UpdateWindow, oc.UpdateMinSteps = 8, 3
	oc.SkipWindow, oc.SkipMinSteps = 8, 3
	oc.EMABeta = 0.9
	o := runOpts{Optim: oc}
	o.Train.Steps = 12
	return o
}

// rampedSource ramps its mixture linearly over ramp steps from the 0-based
// step index at, as the loader does for data.stages[].ramp_steps.
type rampedSource struct {
	datasrc.Source
	at, ramp int
}

func (s rampedSource) MixWeights(step int) []float64 {
	a := min(1, max(0, float64(step-s.at+1)/float64(s.ramp)))
	return []float64{0.5 - 0.2*a, 0.5 + 0.2*a}
}

// A mixture ramp keeps the fit off while the weights move: nothing fitted
// or judged from the ramp's first step until the settle steps after its
// last (max(warm-up, 5% of the run, 10) = 25 steps; the fit follows
// MixWeights' interpolated target step by step),
// then the new mixture's own fit.
func TestOnTrackRampRestarts(t *testing.T) {
	o := baseOpts()
	o.Train.Steps = 500
	o.Optim.Schedule, o.Optim.Warmup = "constant", 10
	o.Data = rampedSource{Source: o.Data, at: 200, ramp: 50} // steps 201..250 ramp; 250 is at the target
	sched, err := optim.NewSchedule(o.Optim, o.Train.Steps)
	if err != nil {
		t.Fatal(err)
	}
	k := NewOnTrack(o.Optim, o.Train.Steps, o.Data, sched, batchsched.Constant(4), 32)
	for s := 1; s <= 500; s++ {
		m := &runlog.Step{Step: s, TokensSeen: int64(128 * s), TokensComputed: int64(128 * s), TrainLossRaw: 1 + 3/math.Sqrt(float64(s))}
		m.TrainLossRaw += 0.5 * min(1, max(0, float64(s-200)/50)) // harder as the ramp goes
		k.Observe(m)
		fit, judge := k.Phase(s)
		switch {
		case s == 200 && (m.OnTrack == nil || math.IsNaN(m.OnTrack.Residual)):
			t.Fatalf("step 200: %+v, want a judged fit before the ramp", m.OnTrack)
		case s > 200 && s < 275 && (fit || judge || m.OnTrack != nil):
			t.Fatalf("step %d, in or just after the ramp: fit %v judge %v reading %+v; want nothing", s, fit, judge, m.OnTrack)
		case s == 500 && (m.OnTrack == nil || m.OnTrack.ResidualZ > 4):
			t.Fatalf("step 500: %+v, want the new mixture's own fit, on track", m.OnTrack)
		}
	}
}
