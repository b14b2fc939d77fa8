package monitor

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// quietConfig is DefaultConfig without file sinks.
func quietConfig() Config {
	c := DefaultConfig()
	c.SQLite, c.TensorBoard, c.TraceSteps = false, false, 0
	return c
}

func newOptsMonitor(t *testing.T, cfg Config, opts Options) *Monitor {
	t.Helper()
	opts.Logger = quietLogger()
	m, err := New(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// only keeps the alerts of one rule.
func only(as []Alert, rule string) []Alert {
	var out []Alert
	for _, a := range as {
		if a.Rule == rule {
			out = append(out, a)
		}
	}
	return out
}

// TestFlatLossAfterWarmup: seed 000's red flag fires when the loss stops
// falling early after warm-up (the warm-up from Options or read from
// learning_rate), not on a healthy or slow-but-real decline, a loss that is
// flat during warm-up, or a run resumed late.
func TestFlatLossAfterWarmup(t *testing.T) {
	cases := []struct {
		name     string
		warmup   int
		from, to int64
		loss     func(s int64) float64
		lr       func(s int64) float64 // nil = no learning_rate in the samples
		want     bool
		lo, hi   int64 // the alert's step range when want
	}{
		{"flat after warm-up (configured)", 100, 1, 400, func(s int64) float64 {
			if s <= 100 {
				return 5 - 2*float64(s)/100
			}
			return 3
		}, nil, true, 165, 228},
		{"never moves, warm-up read from learning_rate", 0, 1, 400, func(int64) float64 { return 5.5 }, func(s int64) float64 {
			return 1e-3 * math.Min(1, float64(s)/50)
		}, true, 51, 114},
		{"healthy decline", 100, 1, 600, func(s int64) float64 { return 3 + 2*math.Exp(-float64(s)/200) }, nil, false, 0, 0},
		{"slow but real fall (2% per window)", 100, 1, 600, func(s int64) float64 { return 4 * math.Pow(0.98, float64(s)/64) }, nil, false, 0, 0},
		{"flat during a long warm-up, falls after", 300, 1, 700, func(s int64) float64 {
			if s <= 150 {
				return 5.5
			}
			return 5.5 * math.Pow(0.97, float64(s-150)/64)
		}, nil, false, 0, 0},
		{"resumed long after warm-up on a plateau", 100, 5000, 5400, func(int64) float64 { return 2.1 }, nil, false, 0, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := newOptsMonitor(t, quietConfig(), Options{WarmupSteps: tc.warmup})
			rng := rand.New(rand.NewPCG(5, 9))
			var got []Alert
			for s := tc.from; s <= tc.to; s++ {
				v := map[string]float64{"train_loss_raw": tc.loss(s) * (1 + 0.002*rng.NormFloat64())}
				if tc.lr != nil {
					v["learning_rate"] = tc.lr(s)
				}
				got = append(got, only(m.Observe(Sample{Step: s, Values: v}), RuleFlatLoss)...)
			}
			if (len(got) > 0) != tc.want {
				t.Fatalf("flat_loss_after_warmup fired %d times, want fired = %v: %+v", len(got), tc.want, got)
			}
			if tc.want {
				a := got[0]
				if a.Severity != SEV1 || a.Step < tc.lo || a.Step > tc.hi || !strings.Contains(a.Message, "after warm-up") || len(got) != 1 {
					t.Errorf("alerts %+v: want one SEV1 at a step in [%d, %d]", got, tc.lo, tc.hi)
				}
			}
		})
	}
}

// TestCheckpointTimeGrowth: a checkpoint much slower than the run's first
// ones is SEV2; jitter, tiny checkpoints and a single earlier checkpoint
// are not. Checkpoint events (the trainer) and the checkpoint and step
// records of a watched run count each checkpoint once.
func TestCheckpointTimeGrowth(t *testing.T) {
	cases := []struct {
		name  string
		times []float64
		want  int // index of the checkpoint that fires; -1 = none
	}{
		{"grows to 2.5×", []float64{2, 2.1, 1.9, 2.2, 5}, 4},
		{"gradual growth", []float64{2, 2, 2, 3, 3.8, 4.5}, 5},
		{"jitter within 1.75×", []float64{2, 2.1, 1.9, 3.5, 2.4}, -1},
		{"tiny checkpoints", []float64{0.05, 0.05, 0.06, 0.3}, -1},
		{"one earlier checkpoint is no baseline", []float64{1, 5}, -1},
	}
	for _, tc := range cases {
		for _, path := range []string{"events", "watch"} {
			t.Run(tc.name+"/"+path, func(t *testing.T) {
				m := newOptsMonitor(t, quietConfig(), Options{})
				var got []Alert
				for i, x := range tc.times {
					step := int64(100 * (i + 1))
					if path == "events" {
						got = append(got, m.Record(Event{Kind: EventCheckpoint, Step: step, OK: true, Values: map[string]float64{"checkpoint_time": x, "checkpoint_size": 1e6}})...)
					} else {
						// metrics.jsonl: the checkpoint record at its step,
						// then the next step's record carrying its time.
						got = append(got, m.Observe(Sample{Step: step, Values: map[string]float64{"checkpoint_time": x, "checkpoint_ok": 1, "checkpoint_size": 1e6}})...)
						got = append(got, m.Observe(Sample{Step: step + 1, Values: map[string]float64{"train_loss_raw": 3, "step_time": 0.1, "checkpoint_time": x}})...)
					}
					fired := only(got, RuleCheckpointSlow)
					if (i == tc.want) != (len(fired) == 1) || len(fired) > 1 {
						t.Fatalf("after checkpoint %d (%.3g s): %d alerts, want one from checkpoint %d: %+v", i, x, len(fired), tc.want, fired)
					}
					if len(fired) == 1 && (fired[0].Severity != SEV2 || fired[0].Metric != "checkpoint_time") {
						t.Errorf("alert %+v", fired[0])
					}
				}
			})
		}
	}
}

// TestOutputKLSpike: output_kl_to_prev far above its recent checkpoints is
// SEV1; the healthy falling series of shakespeare-char, a moderate rise
// and a spike of tiny values are not.
func TestOutputKLSpike(t *testing.T) {
	sc := []float64{3.63, 0.271, 0.160, 0.0885} // shakespeare-char, 2,000 steps
	cases := []struct {
		name string
		kls  []float64
		want bool
	}{
		{"shakespeare-char", sc, false},
		{"spike after a falling series", append(append([]float64(nil), sc...), 1.2), true},
		{"moderate rise (3×)", append(append([]float64(nil), sc...), 0.48), false},
		{"tiny values", []float64{0.01, 0.005, 0.004, 0.03}, false},
	}
	for _, tc := range cases {
		for _, path := range []string{"events", "watch"} {
			t.Run(tc.name+"/"+path, func(t *testing.T) {
				m := newOptsMonitor(t, quietConfig(), Options{})
				var got []Alert
				for i, x := range tc.kls {
					step := int64(500 * (i + 1))
					vals := map[string]float64{"output_kl_to_prev": x, "checkpoint_time": 0.05}
					if path == "events" {
						got = append(got, m.Record(Event{Kind: EventCheckpoint, Step: step, OK: true, Values: vals})...)
					} else {
						got = append(got, m.Observe(Sample{Step: step, Values: vals})...)
					}
				}
				fired := only(got, RuleKLSpike)
				if (len(fired) > 0) != tc.want {
					t.Fatalf("output_kl_spike fired %d times, want %v: %+v", len(fired), tc.want, fired)
				}
				if tc.want && (fired[0].Severity != SEV1 || fired[0].Step != int64(500*len(tc.kls))) {
					t.Errorf("alert %+v: want SEV1 at the last checkpoint", fired[0])
				}
			})
		}
	}
}

// evalSeries feeds evaluations (val_loss, train_val_gap, fixed_probe_loss,
// slices) through Record (the trainer) or Observe (kestrel watch).
func evalSeries(m *Monitor, path string, evals []map[string]float64, every int64) []Alert {
	var got []Alert
	for i, v := range evals {
		step := every * int64(i+1)
		if path == "events" {
			got = append(got, m.Record(Event{Kind: EventEval, Step: step, OK: true, Values: v})...)
		} else {
			got = append(got, m.Observe(Sample{Step: step, Values: v})...)
		}
	}
	return got
}

// scEvals are the evals of a healthy shakespeare-char run (2,000 steps):
// val_loss, train_val_gap and fixed_probe_loss.
var scEvals = [][3]float64{
	{2.0975, -0.0139, 2.2699}, {1.9776, 0.102, 2.1379}, {1.8616, 0.1321, 2.0473}, {1.8127, 0.1323, 1.9274},
	{1.7524, 0.1604, 1.8994}, {1.708, 0.1689, 1.8437}, {1.6803, 0.1684, 1.8495}, {1.6746, 0.1825, 1.7988},
}

func scSeries() []map[string]float64 {
	var out []map[string]float64
	for _, e := range scEvals {
		out = append(out, map[string]float64{"val_loss": e[0], "train_val_gap": e[1], "fixed_probe_loss": e[2]})
	}
	return out
}

// TestEvalRules: fixed_probe_discontinuity, train_val_gap_widening and
// slice_val_regression fire on their pathology and not on the near miss
// beside it, through both the trainer's eval events and kestrel watch.
func TestEvalRules(t *testing.T) {
	cases := []struct {
		name   string
		rule   string
		sev    Severity
		stages []MixStage
		evals  func() []map[string]float64
		want   bool
	}{
		{"healthy shakespeare-char: probe", RuleProbeJump, SEV2, nil, scSeries, false},
		{"healthy shakespeare-char: gap", RuleGapWidening, SEV2, nil, scSeries, false},
		{"probe jumps, val does not", RuleProbeJump, SEV2, nil, func() []map[string]float64 {
			ev := scSeries()
			ev[5]["fixed_probe_loss"] += 0.5 // e.g. a tokenizer change at a resume
			return ev
		}, true},
		{"probe and val drop together (LR decay)", RuleProbeJump, SEV2, nil, func() []map[string]float64 {
			ev := scSeries()
			for i := 5; i < len(ev); i++ {
				ev[i]["val_loss"] -= 0.4
				ev[i]["fixed_probe_loss"] -= 0.42
			}
			return ev
		}, false},
		{"gap widens, val flat (overfitting)", RuleGapWidening, SEV2, nil, func() []map[string]float64 {
			var ev []map[string]float64
			for i, g := range []float64{0.05, 0.06, 0.1, 0.16, 0.22} {
				ev = append(ev, map[string]float64{"val_loss": 1.70 - 0.005*float64(i), "train_val_gap": g})
			}
			return ev
		}, true},
		{"gap widens by a little, val flat", RuleGapWidening, SEV2, nil, func() []map[string]float64 {
			var ev []map[string]float64
			for i, g := range []float64{0.05, 0.06, 0.07, 0.08, 0.09} {
				ev = append(ev, map[string]float64{"val_loss": 1.70 - 0.005*float64(i), "train_val_gap": g})
			}
			return ev
		}, false},
		{"negative gap closing early in training (EMA lag)", RuleGapWidening, SEV2, nil, func() []map[string]float64 {
			var ev []map[string]float64
			for i, g := range []float64{-0.3, -0.15, -0.05, 0.0} {
				ev = append(ev, map[string]float64{"val_loss": []float64{2.1, 2.05, 2.02, 2.0}[i], "train_val_gap": g})
			}
			return ev
		}, false},
		{"one slice regresses while val falls", RuleSliceRegression, SEV2, nil, sliceSeries(0.08), true},
		{"slices fall with val", RuleSliceRegression, SEV2, nil, sliceSeries(-0.05), false},
		{"slice regresses after a stage lowered its weight", RuleSliceRegression, SEV2, []MixStage{
			{StartStep: 1, Weights: map[string]float64{"code": 0.25, "web": 0.75}},
			{StartStep: 161, Weights: map[string]float64{"code": 0.05, "web": 0.95}},
		}, sliceSeries(0.08), false},
		{"slice regresses while a stage raised its weight", RuleSliceRegression, SEV2, []MixStage{
			{StartStep: 1, Weights: map[string]float64{"code": 0.25, "web": 0.75}},
			{StartStep: 161, Weights: map[string]float64{"code": 0.5, "web": 0.5}},
		}, sliceSeries(0.08), true},
		{"slice rises with val (val_regression's case)", RuleSliceRegression, SEV2, nil, func() []map[string]float64 {
			ev := sliceSeries(0.08)()
			for i, e := range ev {
				e["val_loss"] = 3 + 0.06*float64(i)
			}
			return ev
		}, false},
	}
	for _, tc := range cases {
		for _, path := range []string{"events", "watch"} {
			t.Run(tc.name+"/"+path, func(t *testing.T) {
				m := newOptsMonitor(t, quietConfig(), Options{MixStages: tc.stages})
				fired := only(evalSeries(m, path, tc.evals(), 50), tc.rule)
				if (len(fired) > 0) != tc.want {
					t.Fatalf("%s fired %d times, want %v: %+v", tc.rule, len(fired), tc.want, fired)
				}
				if tc.want && (fired[0].Severity != tc.sev || fired[0].Message == "" || !strings.Contains(fired[0].Runbook, "Contain:")) {
					t.Errorf("alert %+v", fired[0])
				}
			})
		}
	}
}

// sliceSeries: four evals 50 steps apart (stage boundary at 161 between
// the third and fourth); val_loss and the web slice fall, the code slice
// changes by codeStep per eval from the third eval on.
func sliceSeries(codeStep float64) func() []map[string]float64 {
	return func() []map[string]float64 {
		var ev []map[string]float64
		for i := 0; i < 5; i++ {
			code := 5.8 - 0.2*float64(min(i, 1))
			if i >= 2 {
				code = 5.6 + codeStep*float64(i-1)
			}
			ev = append(ev, map[string]float64{
				"val_loss": 6.2 - 0.2*float64(i), "slice_val_loss/web": 6.4 - 0.25*float64(i), "slice_val_loss/code": code,
			})
		}
		return ev
	}
}

// TestMixDriftWithStages: with a stage schedule the mixture-drift rule
// compares each step's shares with the stage in force: a loader that
// follows the stages is quiet, one that ignores the second stage drifts.
func TestMixDriftWithStages(t *testing.T) {
	stages := []MixStage{
		{StartStep: 1, Weights: map[string]float64{"books": 0.2, "code": 0.25, "wiki": 0.55}},
		{StartStep: 161, Weights: map[string]float64{"books": 3, "code": 0.5, "wiki": 6.5}}, // normalised by the monitor
	}
	for _, tc := range []struct {
		name    string
		follows bool
	}{{"loader follows the stages", true}, {"loader ignores the second stage", false}} {
		t.Run(tc.name, func(t *testing.T) {
			m := newOptsMonitor(t, quietConfig(), Options{MixStages: stages})
			rng := rand.New(rand.NewPCG(3, 4))
			var got []Alert
			for s := int64(1); s <= 300; s++ {
				w := stages[0].Weights
				if tc.follows && s >= 161 {
					w = map[string]float64{"books": 0.3, "code": 0.05, "wiki": 0.65}
				}
				v := map[string]float64{"train_loss_raw": 3}
				// 16 sequences a step drawn from w
				n := map[string]float64{}
				for i := 0; i < 16; i++ {
					u := rng.Float64()
					switch {
					case u < w["books"]:
						n["books"]++
					case u < w["books"]+w["code"]:
						n["code"]++
					default:
						n["wiki"]++
					}
				}
				for k := range w {
					v["source_mix_share/"+k] = n[k] / 16
				}
				got = append(got, only(m.Observe(Sample{Step: s, Values: v}), RuleMixDrift)...)
			}
			if (len(got) > 0) == tc.follows {
				t.Fatalf("mixture_drift alerts %+v, want fired = %v", got, !tc.follows)
			}
			if !tc.follows && (got[0].Step < 161 || got[0].Step > 161+64 || got[0].Severity != SEV2 || !strings.Contains(got[0].Message, "stage from step 161")) {
				t.Errorf("alert %+v: want SEV2 within a window of the stage at step 161", got[0])
			}
		})
	}
}

// TestConfigRejectsNaNInNewKeys: the new thresholds refuse NaN and
// negative values, naming the key.
func TestConfigRejectsNaNInNewKeys(t *testing.T) {
	for _, tc := range []struct {
		key string
		set func(c *Config)
	}{
		{"fixed_probe_jump", func(c *Config) { c.FixedProbeJump = math.NaN() }},
		{"kl_spike_factor", func(c *Config) { c.KLSpikeFactor = math.Inf(1) }},
		{"kl_spike_min", func(c *Config) { c.KLSpikeMin = math.NaN() }},
		{"gap_widen", func(c *Config) { c.GapWiden = -1 }},
		{"slice_regress_min", func(c *Config) { c.SliceRegressMin = math.NaN() }},
		{"flat_loss_drop", func(c *Config) { c.FlatLossDrop = math.NaN() }},
		{"checkpoint_time_factor", func(c *Config) { c.CheckpointTimeFactor = 0 }},
		{"checkpoint_time_min", func(c *Config) { c.CheckpointTimeMin = math.NaN() }},
		{"mix_drift", func(c *Config) { c.MixDrift = math.NaN() }},
		{"flat_loss_windows", func(c *Config) { c.FlatLossWindows = -1 }},
		{"mix_targets.web", func(c *Config) { c.MixTargets = map[string]float64{"web": math.NaN()} }},
	} {
		c := DefaultConfig()
		tc.set(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.key) {
			t.Errorf("%s: Validate = %v, want an error naming it", tc.key, err)
		}
	}
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatal(err)
	}
}
