package train

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/checkpoint"
	"github.com/kestrel-lm/kestrel/internal/optim"
)

// phaseOpts is baseOpts over 24 steps with every kind of schedule change:
// a warm-up of 10% of the run, WSD-S whose spacing changes at step 9, a
// 1−sqrt decay from step 13, a hold from 17, a re-warm from the current LR
// at 19 and one from optim.min_lr at 22.
func phaseOpts(dir string) Options {
	o := baseOpts(dir)
	o.Train.Steps = 24
	o.Optim.Warmup, o.Optim.WarmupFraction = 0, 0.1
	o.Optim.Schedule, o.Optim.WSDSPeriod, o.Optim.WSDSDecaySteps, o.Optim.MinLR = "wsd-s", 4, 2, 3e-4
	o.Optim.Phases = []optim.Phase{
		{Step: 9, Kind: "wsds", WSDSPeriod: 3, WSDSDecaySteps: 1},
		{Step: 13, Kind: "decay", Steps: 3, Shape: "1-sqrt"},
		{Step: 17, Kind: "hold"},
		{Step: 19, Kind: "rewarm", Peak: ptr(4e-3), Steps: 2},
		{Step: 22, Kind: "rewarm", From: "min_lr", Steps: 1},
	}
	return o
}

// TestPhasesResumeBitExact: the trainer's learning_rate, lr_phase and
// lr_cycle are the schedule's at every step; a run stopped (Ctrl-C: a
// checkpoint at the step) just before, at and just after each phase
// boundary and resumed each time, then killed without a checkpoint and
// resumed from an earlier one, ends with the losses, learning rates and
// checkpoint files of the uninterrupted run, bit for bit.
func TestPhasesResumeBitExact(t *testing.T) {
	ref := filepath.Join(t.TempDir(), "ref")
	o := phaseOpts(ref)
	if _, err := Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	sched, err := optim.NewSchedule(o.Optim, o.Train.Steps)
	if err != nil {
		t.Fatal(err)
	}
	lines := readLines(t, ref)
	if len(lines) != 24 {
		t.Fatalf("%d step lines, want 24", len(lines))
	}
	var phases []string
	for i, m := range lines {
		p := sched.At(i)
		want, _ := json.Marshal(p.LR)
		if string(m["learning_rate"]) != string(want) || field[string](t, m, "lr_phase") != p.Phase || field[int](t, m, "lr_cycle") != p.Cycle {
			t.Errorf("step %d: learning_rate %s %s cycle %s, want %s %s %d", i+1, m["learning_rate"], m["lr_phase"], m["lr_cycle"], want, p.Phase, p.Cycle)
		}
		if e, ok := m["lr_phase_entry"]; ok != (p.Entry > 0) || ok && string(e) != fmt.Sprint(p.Entry) {
			t.Errorf("step %d: lr_phase_entry %q, want %d (0: absent)", i+1, e, p.Entry)
		}
		phases = append(phases, p.Phase)
	}
	// The schedule really changes at each boundary (the test is not vacuous).
	for _, s := range []struct {
		step  int
		phase string
	}{{1, "warmup"}, {3, "stable"}, {9, "stable"}, {11, "decay"}, {13, "decay"}, {17, "hold"}, {19, "rewarm"}, {21, "stable"}, {22, "rewarm"}, {23, "stable"}} {
		if phases[s.step-1] != s.phase {
			t.Errorf("step %d: phase %s, want %s (phases %v)", s.step, phases[s.step-1], s.phase, phases)
		}
	}

	dir := filepath.Join(t.TempDir(), "stopped")
	for _, k := range []int{8, 9, 10, 12, 13, 14, 16, 17, 18, 19, 20, 21, 22, 23} {
		ctx, cancel := context.WithCancel(context.Background())
		o := phaseOpts(dir)
		o.Observers = []Observer{stopAt{step: k, cancel: cancel}}
		if _, err := Run(ctx, o); err != nil {
			t.Fatalf("stop at %d: %v", k, err)
		}
		cancel()
	}
	o = phaseOpts(dir)
	o.Observers = []Observer{stopAt{step: 24}} // killed at the last step: resumes from the checkpoint of step 23
	if _, err := Run(context.Background(), o); err == nil || !strings.Contains(err.Error(), "simulated crash") {
		t.Fatalf("want a crash, got %v", err)
	}
	if _, err := Run(context.Background(), phaseOpts(dir)); err != nil {
		t.Fatal(err)
	}
	if w, g := lossSeq(t, ref), lossSeq(t, dir); !slices.Equal(w, g) {
		t.Errorf("losses differ after resumes across the phases:\n got %v\nwant %v", g, w)
	}
	lr := func(d string) (out []string) {
		for _, m := range readLines(t, d) {
			out = append(out, string(m["learning_rate"])+string(m["lr_phase"]))
		}
		return out
	}
	if w, g := lr(ref), lr(dir); !slices.Equal(w, g) {
		t.Errorf("learning rates differ after resumes:\n got %v\nwant %v", g, w)
	}
	a, b := filepath.Join(ref, "checkpoints", checkpoint.Name(24)), filepath.Join(dir, "checkpoints", checkpoint.Name(24))
	for _, f := range []string{checkpoint.ModelFile, checkpoint.OptimizerFile, checkpoint.EMAFile} {
		if fileSum(t, a, f) != fileSum(t, b, f) {
			t.Errorf("%s differs between the uninterrupted and the resumed run", f)
		}
	}
}
