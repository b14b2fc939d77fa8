package train

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/checkpoint"
	"github.com/kestrel-lm/kestrel/internal/rewind"
	"github.com/kestrel-lm/kestrel/internal/runlog"
)

// fakeHealth is an observer that judges checkpoints by a table: a step is
// healthy unless it falls in one of the unhealthy ranges; an incident
// opened at incidentFrom stays open from then on.
type fakeHealth struct {
	bandBadFrom, bandBadTo int // loss out of band over [from, to] (0: never)
	incidentFrom           int // 0: never
	healedFrom             int // incidents closed from this step (0: never)
}

func (fakeHealth) OnStep(*runlog.Step) error             { return nil }
func (fakeHealth) OnEval(*runlog.Eval) error             { return nil }
func (fakeHealth) OnCheckpoint(*runlog.Checkpoint) error { return nil }

func (f fakeHealth) CheckpointHealth(step int) (checkpoint.Health, bool) {
	h := checkpoint.Health{Status: checkpoint.HealthHealthy, Loss: &checkpoint.LossBand{Within: true, Window: 8}}
	if f.bandBadFrom > 0 && step >= f.bandBadFrom && step <= f.bandBadTo {
		h.Status, h.Loss.Within, h.Loss.Z = checkpoint.HealthUnhealthy, false, checkpoint.Num(math.Inf(1))
	}
	if f.incidentFrom > 0 && step >= f.incidentFrom && (f.healedFrom == 0 || step < f.healedFrom) {
		h.Status = checkpoint.HealthUnhealthy
		h.Incidents = []checkpoint.Incident{{Rule: "divergence", Severity: "SEV0", Step: f.incidentFrom, LastStep: step, Count: step - f.incidentFrom + 1}}
	}
	return h, true
}

func readHealth(t *testing.T, dir string, step int) *checkpoint.Health {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "checkpoints", checkpoint.Name(step), checkpoint.StateFile))
	if err != nil {
		t.Fatal(err)
	}
	var st checkpoint.State
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatalf("state.json of step %d: %v", step, err)
	}
	return st.Health
}

// TestKeepPolicyKeepsLastGood: checkpoint.every = 2, keep = 2, and the run
// turns bad at step 14 of 20 (an LR blow-up the monitor reports as an open
// incident). The old keep policy left only 16, 18 and 20, all written
// after the blow-up; the newest healthy checkpoint and the newest one from
// before the open incident must survive, and stop being protected once the
// incident closes.
func TestKeepPolicyKeepsLastGood(t *testing.T) {
	for _, c := range []struct {
		name string
		obs  []Observer
		want []int
	}{
		{"no reporter: unknown health, plain keep policy", nil, []int{20, 18, 16}},
		{"blow-up at 14 still open", []Observer{fakeHealth{incidentFrom: 14}}, []int{20, 18, 16, 12}},
		{"incident closed by step 18", []Observer{fakeHealth{incidentFrom: 14, healedFrom: 18}}, []int{20, 18, 16}},
		// Healthy last at 6; the loss leaves its band at 8 and an incident
		// opens at 15: 14 is the newest from before the incident, 6 the
		// newest healthy one.
		{"band then incident", []Observer{fakeHealth{bandBadFrom: 8, bandBadTo: 20, incidentFrom: 15}}, []int{20, 18, 16, 14, 6}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "run")
			o := baseOpts(dir)
			o.Train.Steps, o.Train.EvalEvery = 20, 4
			o.Checkpoint = CheckpointConfig{Every: 2, Keep: 2}
			o.Observers = c.obs
			if _, err := Run(context.Background(), o); err != nil {
				t.Fatal(err)
			}
			list, err := checkpoint.ListDir(filepath.Join(dir, "checkpoints"))
			if err != nil {
				t.Fatal(err)
			}
			var steps []int
			for _, e := range list {
				steps = append(steps, e.Step)
			}
			if !slices.Equal(steps, c.want) {
				t.Errorf("kept %v, want %v", steps, c.want)
			}
		})
	}
}

// TestCheckpointHealthStamped: state.json records the reporter's verdict
// and the latest evaluation's val and probe losses; without a reporter the
// health is unknown, and checkpoint.LastGood / checkpoint.Resolve follow the stamps.
func TestCheckpointHealthStamped(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	o := baseOpts(dir)
	o.Train.Steps, o.Train.EvalEvery, o.Train.ProbeSequences = 12, 4, 2
	o.Checkpoint = CheckpointConfig{Every: 2, Keep: 10}
	o.Observers = []Observer{fakeHealth{incidentFrom: 9}}
	if _, err := Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	h8, h10 := readHealth(t, dir, 8), readHealth(t, dir, 10)
	if h8 == nil || h8.Status != checkpoint.HealthHealthy || len(h8.Incidents) != 0 {
		t.Fatalf("step 8 health = %+v, want healthy", h8)
	}
	if h8.ValStep != 8 || h8.ValLoss == nil || !(*h8.ValLoss > 0) || h8.ProbeLoss == nil || !(*h8.ProbeLoss > 0) {
		t.Errorf("step 8: val loss %v / probe loss %v at eval step %d, want both from the eval at step 8", h8.ValLoss, h8.ProbeLoss, h8.ValStep)
	}
	if h10.Status != checkpoint.HealthUnhealthy || h10.FirstIncident() != 9 || h10.Summary() != "unhealthy: divergence@9" {
		t.Errorf("step 10 health = %+v (%s), want unhealthy: divergence@9", h10, h10.Summary())
	}
	if h10.ValStep != 8 {
		t.Errorf("step 10: eval step %d, want the latest eval (8)", h10.ValStep)
	}
	if h := readHealth(t, dir, 2); h.ValLoss != nil {
		t.Errorf("step 2: val loss %v before any eval, want none", *h.ValLoss)
	}

	list, err := checkpoint.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	var good []int
	for _, c := range list {
		if c.LastGood {
			good = append(good, c.Step)
		}
		if c.Bytes <= 0 || c.Kind == "" || c.Err != "" {
			t.Errorf("step %d: %+v", c.Step, c)
		}
	}
	if !slices.Equal(good, []int{8}) {
		t.Errorf("last-good marks %v, want [8]", good)
	}
	ck := filepath.Join(dir, "checkpoints")
	for _, r := range []struct{ name, want string }{
		{"last-good", filepath.Join(ck, checkpoint.Name(8))},
		{"last", filepath.Join(ck, checkpoint.Name(12))},
		{"step-4", filepath.Join(ck, checkpoint.Name(4))},
		{"6", filepath.Join(ck, checkpoint.Name(6))},
		{"step-00000010", filepath.Join(ck, checkpoint.Name(10))},
		{filepath.Join(ck, checkpoint.Name(2)), filepath.Join(ck, checkpoint.Name(2))},
		{"step-7", ""}, // no such checkpoint
		{"best", ""},
		{"", ""},
	} {
		got, err := checkpoint.Resolve(dir, r.name)
		if r.want == "" {
			if err == nil {
				t.Errorf("ResolveCheckpoint(%q) = %s, want an error", r.name, got)
			}
			continue
		}
		if err != nil || got != r.want {
			t.Errorf("ResolveCheckpoint(%q) = %q, %v; want %q", r.name, got, err, r.want)
		}
	}

	// A corrupt checkpoint is passed over by last and last-good.
	for _, step := range []int{8, 12} {
		f, err := os.OpenFile(filepath.Join(ck, checkpoint.Name(step), checkpoint.ModelFile), os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.Write([]byte("junk"))
		f.Close()
	}
	for name, want := range map[string]int{"last": 10, "last-good": 6} {
		if got, err := checkpoint.Resolve(dir, name); err != nil || got != filepath.Join(ck, checkpoint.Name(want)) {
			t.Errorf("with 8 and 12 corrupt: checkpoint.Resolve(%q) = %q, %v; want step %d", name, got, err, want)
		}
	}

	if l, err := rewind.ResolveTarget(dir, "last-good", nil); err != nil || l.State.Step != 6 {
		t.Errorf("rewind --to last-good: %v, want the healthy checkpoint 6 that verifies", err)
	}

	// Without a reporter: unknown, and no last-good.
	dir2 := filepath.Join(t.TempDir(), "run2")
	o2 := baseOpts(dir2)
	o2.Train.Steps, o2.Checkpoint = 4, CheckpointConfig{Every: 2, Keep: 5}
	if _, err := Run(context.Background(), o2); err != nil {
		t.Fatal(err)
	}
	if h := readHealth(t, dir2, 4); h == nil || h.Status != checkpoint.HealthUnknown || h.Summary() != checkpoint.HealthUnknown {
		t.Errorf("no reporter: health %+v, want unknown", h)
	}
	if _, err := checkpoint.Resolve(dir2, "last-good"); err == nil {
		t.Error("last-good of a run of unknown health: want an error")
	}
}

// TestNumJSON: non-finite health values round-trip in the run's number
// encoding.
func TestNumJSON(t *testing.T) {
	for _, v := range []float64{0, 1.25, -3, math.NaN(), math.Inf(1), math.Inf(-1)} {
		b, err := json.Marshal(checkpoint.Num(v))
		if err != nil {
			t.Fatal(err)
		}
		var back checkpoint.Num
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		if !(float64(back) == v || math.IsNaN(v) && math.IsNaN(float64(back))) {
			t.Errorf("%v → %s → %v", v, b, back)
		}
	}
	var n checkpoint.Num
	if err := json.Unmarshal([]byte(`"lots"`), &n); err == nil {
		t.Error(`"lots": want an error`)
	}
	n = 2
	if err := json.Unmarshal([]byte(`null`), &n); err != nil || n != 2 {
		t.Errorf("null: %v, %v; want no error and the value left as it was", n, err)
	}
}
