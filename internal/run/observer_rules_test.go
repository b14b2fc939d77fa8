package run

import (
	"reflect"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/config"
	"github.com/kestrel-lm/kestrel/internal/data/loader"
	"github.com/kestrel-lm/kestrel/internal/runlog"
	"github.com/kestrel-lm/kestrel/monitor"
)

// stagedRun is a dataset config with a mixture and one later stage, like
// the demo's.
func stagedRun() config.Config {
	cfg := tinyRun(300)
	cfg.Data.Kind, cfg.Data.Path = "dataset", ""
	cfg.Data.Sources = []loader.SourceConfig{{Name: "books", Weight: 0.5}, {Name: "code", Weight: 0.5}}
	cfg.Data.Stages = []loader.Stage{{StartStep: 161, Weights: map[string]float64{"books": 0.9, "code": 0.1}}}
	cfg.Monitor.SQLite, cfg.Monitor.TensorBoard, cfg.Monitor.TraceSteps = false, false, 0
	return cfg
}

func TestMixStagesFromConfig(t *testing.T) {
	got := mixStages(stagedRun())
	want := []monitor.MixStage{
		{StartStep: 1, Weights: map[string]float64{"books": 0.5, "code": 0.5}},
		{StartStep: 161, Weights: map[string]float64{"books": 0.9, "code": 0.1}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("mixStages = %+v, want %+v", got, want)
	}
	cfg := stagedRun()
	cfg.Data.Stages[0].RampSteps = 50 // the ramp reaches the monitor
	if got := mixStages(cfg); got[1].RampSteps != 50 {
		t.Fatalf("ramp_steps 50: mixStages = %+v", got)
	}
	cfg.Data.Sources, cfg.Data.Stages = nil, nil
	if got := mixStages(cfg); got != nil {
		t.Errorf("no sources, no stages: %+v, want none", got)
	}
}

// TestObserverMixDriftWithStages: a run with data.stages keeps the
// mixture-drift rule (it was switched off whenever stages existed): shares
// that follow the stages are quiet, shares that miss the stage at step 161
// are a SEV2 mixture_drift.
func TestObserverMixDriftWithStages(t *testing.T) {
	for _, tc := range []struct {
		name    string
		follows bool
	}{{"follows the stages", true}, {"misses the stage", false}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			ob, err := NewObserver(stagedRun(), dir, quietLog(), nil)
			if err != nil {
				t.Fatal(err)
			}
			for s := 1; s <= 300; s++ {
				books := 0.5
				if tc.follows && s >= 161 {
					books = 0.9
				}
				if err := ob.OnStep(&runlog.Step{Step: s, TrainLossRaw: 3 - float64(s)/1000, SourceMixShare: map[string]float64{"books": books, "code": 1 - books}}); err != nil {
					t.Fatal(err)
				}
			}
			if err := ob.Finish(nil); err != nil {
				t.Fatal(err)
			}
			var drift []monitor.Alert
			for _, a := range readAlerts(t, dir) {
				if a.Rule == monitor.RuleMixDrift {
					drift = append(drift, a)
				}
			}
			if (len(drift) > 0) == tc.follows {
				t.Fatalf("mixture_drift alerts %+v, want fired = %v", drift, !tc.follows)
			}
			if !tc.follows && (drift[0].Step < 161 || drift[0].Step > 161+int64(stagedRun().Monitor.Window)) {
				t.Errorf("first alert at step %d, want within a window of the stage at step 161", drift[0].Step)
			}
		})
	}
}
