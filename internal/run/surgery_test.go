package run

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/dashboard"
	"github.com/kestrel-lm/kestrel/internal/data/loader"
	"github.com/kestrel-lm/kestrel/internal/model"
	"github.com/kestrel-lm/kestrel/internal/optim"
	"github.com/kestrel-lm/kestrel/internal/runlog"
	"github.com/kestrel-lm/kestrel/internal/train"
)

// stopCancel cancels the run's context at one step: Ctrl-C, which writes a
// checkpoint at that step.
type stopCancel struct {
	step   int
	cancel context.CancelFunc
}

func (s stopCancel) OnStep(m *runlog.Step) error {
	if m.Step == s.step {
		s.cancel()
	}
	return nil
}
func (stopCancel) OnEval(*runlog.Eval) error             { return nil }
func (stopCancel) OnCheckpoint(*runlog.Checkpoint) error { return nil }

// surgeryOpts is docs/surgery.md's walkthrough scaled down to 40 steps of
// a tiny model on two shipped sources: warm-up 5% of the run, WSD-S
// (period 8, decay 2) whose spacing changes at step 13 (period 5, decay
// 1), a 1−sqrt cooldown from step 25 beside a data stage ramping over 5
// steps (25..29) to wiki only, and a reheat from the LR in force at 35;
// optimizer is optim.name (the walkthrough swaps AdamW for AdamC on the
// checkpoint of step 24, as kestrel rewind --set optim.name=adamc does).
func surgeryOpts(t *testing.T, dir string, ds *loader.Dataset, optimizer string) (train.Options, *loader.Loader) {
	mc := model.DefaultConfig()
	mc.DModel, mc.NLayers, mc.NHeads, mc.NKVHeads, mc.MLPHidden, mc.SeqLen, mc.DocMask = 16, 1, 2, 2, 32, 32, true
	o, l := loaderRunOpts(t, dir, ds, mc, 40, nil, loader.Stage{StartStep: 25, RampSteps: 5, Weights: map[string]float64{"wiki": 1}})
	o.Optim.Warmup, o.Optim.WarmupFraction = 0, 0.05
	o.Optim.Schedule, o.Optim.WSDSPeriod, o.Optim.WSDSDecaySteps, o.Optim.DecayShape = "wsd-s", 8, 2, "1-sqrt"
	o.Optim.Phases = []optim.Phase{
		{Step: 13, Kind: "wsds", WSDSPeriod: 5, WSDSDecaySteps: 1},
		{Step: 25, Kind: "decay", Steps: 6},
		{Step: 35, Kind: "rewarm", From: "current", Peak: ptrTo(5e-4), Steps: 3},
	}
	o.Checkpoint.Every, o.Checkpoint.Keep = 40, 50
	o.Optim.Name = optimizer
	return o, l
}

func ptrTo(v float64) *float64 { return &v }

// TestSurgeryWalkthroughResume: the walkthrough's run — AdamW to step 24,
// stopped there, AdamC from its checkpoint on — stopped (Ctrl-C, a
// checkpoint at the step) just before, at and just after every change —
// the WSD-S spacing (13), the cooldown, the start of the mixture ramp and
// AdamC (25), the end of the ramp (29), the reheat (35) — and resumed each time,
// then killed without a checkpoint and resumed from an earlier one, logs
// exactly the losses, learning rates, phases and mixture shares of the
// uninterrupted run; the LR and the mixture target move at each change.
func TestSurgeryWalkthroughResume(t *testing.T) {
	ds := shippedByteDataset(t)
	ref := filepath.Join(t.TempDir(), "ref")
	ctx, cancel := context.WithCancel(context.Background())
	o, _ := surgeryOpts(t, ref, ds, "adamw")
	o.Observers = []train.Observer{stopCancel{24, cancel}}
	if _, err := train.Run(ctx, o); err != nil {
		t.Fatal(err)
	}
	cancel()
	o, l := surgeryOpts(t, ref, ds, "adamc")
	if _, err := train.Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	man, err := runlog.ReadManifest(ref)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(man.Starts); n != 2 || man.Starts[1].Step != 24 || man.Starts[1].OptimizerSwap == "" {
		t.Fatalf("manifest starts %+v: want the second at step 24 swapping adamw for adamc", man.Starts)
	}
	sched, err := optim.NewSchedule(o.Optim, 40)
	if err != nil {
		t.Fatal(err)
	}
	trace := func(dir string) []string {
		var out []string
		for _, m := range metricLines(t, dir) {
			b, _ := json.Marshal([]any{m["step"], m["train_loss_raw"], m["learning_rate"], m["lr_phase"], m["source_mix_share/wiki"], m["source_mix_target/wiki"], m["data_stage_entry"], m["data_stage_ramp"]})
			out = append(out, string(b))
		}
		return out
	}
	want := trace(ref)
	if len(want) != 40 {
		t.Fatalf("%d step lines, want 40", len(want))
	}
	for i, m := range metricLines(t, ref) {
		s := i + 1
		if lr := m["learning_rate"].(float64); lr != sched.At(i).LR {
			t.Errorf("step %d: learning_rate %v, want %v", s, lr, sched.At(i).LR)
		}
		if tgt := m["source_mix_target/wiki"].(float64); tgt != l.MixWeights(i)[1] {
			t.Errorf("step %d: source_mix_target/wiki %v, want %v", s, tgt, l.MixWeights(i)[1])
		}
		entry, ramp := l.MixStage(i)
		if e, _ := m["data_stage_entry"].(float64); int(e) != entry || m["data_stage_ramp"] != nil != (ramp > 0) || ramp > 0 && m["data_stage_ramp"] != ramp {
			t.Errorf("step %d: data_stage_entry %v, data_stage_ramp %v; want %d, %v", s, m["data_stage_entry"], m["data_stage_ramp"], entry, ramp)
		}
	}
	for _, c := range []struct {
		step  int
		phase string
		wiki  func(float64) bool
	}{
		{1, "warmup", func(w float64) bool { return w == 0.3 }},
		{10, "decay", nil}, {13, "stable", nil}, {17, "decay", nil}, // base WSD-S decays 9..10; the new spacing's first at 17
		{24, "stable", func(w float64) bool { return w == 0.3 }},
		{25, "decay", func(w float64) bool { return w > 0.3 && w < 1 }},
		{29, "decay", func(w float64) bool { return w == 1 }},
		{34, "decay", nil}, {35, "rewarm", nil}, {38, "stable", nil},
	} {
		p := sched.At(c.step - 1)
		if p.Phase != c.phase || c.wiki != nil && !c.wiki(l.MixWeights(c.step - 1)[1]) {
			t.Errorf("step %d: phase %s, wiki target %v; want %s", c.step, p.Phase, l.MixWeights(c.step - 1)[1], c.phase)
		}
	}
	if a, b := sched.At(33).LR, sched.At(37).LR; a != 1e-4 || b != 5e-4 {
		t.Errorf("cooldown ends at %v, reheat peaks at %v; want min_lr 1e-4 and 5e-4", a, b)
	}

	dir := filepath.Join(t.TempDir(), "stopped")
	for _, k := range []int{12, 13, 14, 24, 25, 26, 28, 29, 30, 34, 35, 36} {
		ctx, cancel := context.WithCancel(context.Background())
		name := "adamc"
		if k <= 24 {
			name = "adamw"
		}
		o, _ := surgeryOpts(t, dir, ds, name) // a fresh loader, as after a restart
		o.Observers = []train.Observer{stopCancel{k, cancel}}
		if _, err := train.Run(ctx, o); err != nil {
			t.Fatalf("stop at %d: %v", k, err)
		}
		cancel()
	}
	o, _ = surgeryOpts(t, dir, ds, "adamc")
	o.Observers = []train.Observer{stopAtStep{39}} // killed: resumes from step 36's checkpoint
	if _, err := train.Run(context.Background(), o); err == nil {
		t.Fatal("want the simulated crash")
	}
	o, _ = surgeryOpts(t, dir, ds, "adamc")
	if res, err := train.Run(context.Background(), o); err != nil || !res.Resumed {
		t.Fatalf("resume: %+v, %v", res, err)
	}
	if got := trace(dir); !slices.Equal(got, want) {
		t.Errorf("the walkthrough differs after resumes across its changes:\n got %v\nwant %v", got, want)
	}
	wantMarks := []string{
		"25 data stage 1 starts: ramping to {shakespeare 0, wiki 1} over 5 steps",
		"29 data stage 1 ramp done",
	}
	for _, run := range []string{ref, dir} {
		if got := dataStageMarkers(t, run); !slices.Equal(got, wantMarks) {
			t.Errorf("%s: the dashboard's data-stage markers %q, want %q", filepath.Base(run), got, wantMarks)
		}
	}
}

// dataStageMarkers are the data-stage markers the dashboard serves for a
// run (/api/events), as "step title".
func dataStageMarkers(t *testing.T, runDir string) []string {
	t.Helper()
	srv, err := dashboard.New("", []string{runDir})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	resp, err := http.Get(ts.URL + "/api/events?run=" + filepath.Base(runDir))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var evs []dashboard.Event
	if err := json.NewDecoder(resp.Body).Decode(&evs); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range evs {
		if e.Kind == "data_stage" {
			out = append(out, fmt.Sprintf("%g %s", e.Step, e.Title))
		}
	}
	return out
}
