package run

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/optim"
	"github.com/kestrel-lm/kestrel/internal/rewind"
	"github.com/kestrel-lm/kestrel/internal/runlog"
)

// stepLRs maps step → (learning_rate, lr_phase) of a metrics file.
func stepLRs(t *testing.T, path string) map[int][2]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int][2]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var m map[string]json.RawMessage
		if json.Unmarshal([]byte(line), &m) != nil || m["learning_rate"] == nil {
			continue
		}
		var s int
		var ph string
		if json.Unmarshal(m["step"], &s) == nil && json.Unmarshal(m["lr_phase"], &ph) == nil {
			out[s] = [2]string{string(m["learning_rate"]), ph}
		}
	}
	return out
}

// TestRewindSetPhases: `kestrel rewind --set optim.phases=[...]` extends the
// schedule from the step after the checkpoint: a phase at or before the
// checkpoint's step, overlapping phases and a peak below min_lr are
// refused naming the field, nothing recorded; an accepted one is recorded
// in interventions.jsonl, leaves steps 1..C as they were and sets the LR of
// the steps after C as the schedule with the phases says; a second rewind
// that drops the first one's phase after the first one's checkpoint is
// refused too.
func TestRewindSetPhases(t *testing.T) {
	t.Setenv("KESTREL_DATA", "/work/shared/data")
	cfg := tinyRun(16)
	cfg.Optim.Warmup, cfg.Optim.Schedule = 2, "constant"
	cfg.Checkpoint.Every, cfg.Checkpoint.Keep = 4, 5
	cfg.Monitor.SQLite, cfg.Monitor.TensorBoard, cfg.Monitor.TraceSteps = false, false, 0
	dir := filepath.Join(t.TempDir(), "run")
	if _, err := Train(context.Background(), cfg, dir, Options{Logger: quietLog(), Stdout: io.Discard}); err != nil {
		t.Fatal(err)
	}
	orig := stepLRs(t, filepath.Join(dir, "metrics.jsonl"))
	rw := func(to string, set ...string) (*runlog.Intervention, error) {
		return rewind.Rewind(dir, rewind.Options{To: to, SetFlags: set, CheckSet: CheckRewindSet, CheckPlan: CheckRewindPlan})
	}
	for _, c := range []struct{ set, want string }{
		{`optim.phases=[{step = 8, kind = "hold"}]`, "the entry at step 8 starts at or before the rewind point (step 8)"},
		{`optim.phases=[{step = 9, kind = "rewarm", steps = 4}, {step = 11, kind = "hold"}]`, "optim.phases[1].step (11) overlaps optim.phases[0]"},
		{`optim.phases=[{step = 9, kind = "rewarm", steps = 2, peak = 1e-9}]`, "optim.phases[0].peak (1e-09) is below optim.min_lr"},
		{`optim.phases=[{step = 9, kind = "decay"}]`, `optim.phases[0].steps must be >= 1 for kind = "decay"`},
	} {
		if _, err := rw("8", c.set); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("--set %s: got %v, want %q", c.set, err, c.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, runlog.InterventionsFile)); err == nil {
		t.Fatal("a refused rewind recorded an intervention")
	}
	set := `optim.phases=[{step = 9, kind = "decay", steps = 3, shape = "cosine"}, {step = 13, kind = "rewarm", from = "current", peak = 2e-3, steps = 2}]`
	iv, err := rw("8", set)
	if err != nil {
		t.Fatal(err)
	}
	ivs, err := runlog.ReadInterventions(dir)
	if err != nil || len(ivs) != 1 || ivs[0].Set["optim.phases"] != iv.Set["optim.phases"] || iv.Set["optim.phases"] == "" {
		t.Fatalf("interventions.jsonl %+v, %v; want the phases of %+v", ivs, err, iv)
	}
	if _, err := Train(context.Background(), cfg, dir, Options{Logger: quietLog(), Stdout: io.Discard}); err != nil {
		t.Fatal(err)
	}
	got := stepLRs(t, filepath.Join(dir, "metrics.jsonl"))
	eff, _, err := ApplyInterventions(cfg, dir)
	if err != nil {
		t.Fatal(err)
	}
	sched, err := optim.NewSchedule(eff.Optim, cfg.Train.Steps)
	if err != nil {
		t.Fatal(err)
	}
	for s := 1; s <= 16; s++ {
		p := sched.At(s - 1)
		want, _ := json.Marshal(p.LR)
		switch {
		case s <= 8 && got[s] != orig[s]:
			t.Errorf("step %d: %v, was %v before the rewind", s, got[s], orig[s])
		case got[s] != [2]string{string(want), p.Phase}:
			t.Errorf("step %d: %v, want %s %s", s, got[s], want, p.Phase)
		}
	}
	if got[10][1] != "decay" || got[13][1] != "rewarm" || got[16][1] != "stable" || got[16][0] != "0.002" {
		t.Errorf("phases at 10, 13, 16: %v %v %v", got[10], got[13], got[16])
	}
	// Rewinding to 12 without the decay that steps 9..12 trained with changes the past.
	if _, err := rw("12", `optim.phases=[{step = 13, kind = "hold"}]`); err == nil || !strings.Contains(err.Error(), "the entry at step 9 (decay) is gone") {
		t.Errorf("dropping a trained phase: %v", err)
	}
}
