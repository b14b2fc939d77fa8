package replay

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/config"
	"github.com/kestrel-lm/kestrel/internal/run"
	"github.com/kestrel-lm/kestrel/internal/runlog"
	"github.com/kestrel-lm/kestrel/internal/testrun"
)

func quietLog() *slog.Logger { return testrun.Quiet() }

// smallRun prepares a one-source Tiny Shakespeare dataset (320-token BPE)
// and trains 6 steps on it with a checkpoint after every step and an
// evaluation (with the probe batch) every 2 steps.
func smallRun(t *testing.T) (config.Config, string) {
	t.Helper()
	return smallRunSteps(t, 6)
}

// smallRunSteps is smallRun with train.steps = steps.
func smallRunSteps(t *testing.T, steps int) (config.Config, string) {
	t.Helper()
	root := t.TempDir()
	cfg := testrun.Books(t, filepath.Join(root, "data"), `
[train]
steps = 6
batch_size = 4
micro_batch = 2
eval_every = 2
eval_batches = 1
log_every = 0
peak_gflops = 10
[checkpoint]
every = 1
keep = 10
`)
	cfg.Train.Steps = steps
	testrun.Prepare(t, cfg)
	dir := filepath.Join(root, "run")
	if _, err := run.Train(context.Background(), cfg, dir, run.Options{Logger: quietLog(), Stdout: io.Discard}); err != nil {
		t.Fatal(err)
	}
	return cfg, dir
}

// TestReplay: a step replayed on the checkpoint of the step before it
// reproduces the logged loss and gradient norm bit for bit, its rows list
// the loader's documents, and the probe on a checkpoint reproduces the
// fixed_probe_loss logged at that step's evaluation.
func TestReplay(t *testing.T) {
	cfg, dir := smallRun(t)
	for s := 2; s <= 6; s++ {
		res, err := Replay(dir, Options{From: s, To: s})
		if err != nil {
			t.Fatal(err)
		}
		if res.CkptStep != s-1 {
			t.Fatalf("step %d: default checkpoint is after step %d, want %d", s, res.CkptStep, s-1)
		}
		st := res.Steps[0]
		if math.IsNaN(float64(st.LoggedLoss)) || st.Loss != st.LoggedLoss || st.GradNorm != st.LoggedGradNorm {
			t.Errorf("step %d: replayed loss %v grad norm %v, logged %v %v", s, st.Loss, st.GradNorm, st.LoggedLoss, st.LoggedGradNorm)
		}
		if len(res.Warnings) != 0 {
			t.Errorf("step %d: warnings %v", s, res.Warnings)
		}
	}

	// A window on one checkpoint: the first step matches, later ones are the
	// same weights on later batches (and are said to be).
	res, err := Replay(dir, Options{From: 3, To: 5, Checkpoint: "step-2"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Steps) != 3 || res.Steps[0].Loss != res.Steps[0].LoggedLoss || res.Steps[2].Loss == res.Steps[2].LoggedLoss {
		t.Fatalf("window 3:5 on step-2: %+v", res.Steps)
	}
	if len(res.Warnings) != 0 {
		t.Errorf("window 3:5 on step-2: warnings %q", res.Warnings)
	}
	if r, err := Replay(dir, Options{From: 3, To: 3, Checkpoint: "step-1"}); err != nil || len(r.Warnings) != 1 || r.Steps[0].Loss == r.Steps[0].LoggedLoss {
		t.Errorf("step 3 on step-1: %v %+v", err, r)
	}
	if _, err := Replay(dir, Options{From: 1, To: 2}); err == nil || !strings.Contains(err.Error(), "newest before step 1") {
		t.Errorf("step 1 has no checkpoint before it: %v", err)
	}
	// The rows are the loader's BatchInfo.
	l, err := run.OpenLoader(cfg, quietLog())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, st := range res.Steps {
		info, err := l.BatchInfo(st.Step - 1)
		if err != nil {
			t.Fatal(err)
		}
		if len(st.Rows) != len(info.Rows) || len(st.Rows) != 4 {
			t.Fatalf("step %d: %d rows, loader %d", st.Step, len(st.Rows), len(info.Rows))
		}
		for i, r := range info.Rows {
			got := st.Rows[i]
			if got.Source != r.Source || len(got.Docs) != len(r.Docs) || len(got.Docs) == 0 {
				t.Fatalf("step %d row %d: %+v, loader %+v", st.Step, i, got, r)
			}
			for j, d := range r.Docs {
				if got.Docs[j].Index != d.Doc || got.Docs[j].ID != d.ID || d.ID == "" {
					t.Errorf("step %d row %d doc %d: %+v, loader %+v", st.Step, i, j, got.Docs[j], d)
				}
			}
		}
	}
	// The table kestrel replay prints of the result: cmd/kestrel/internal/show.
	var js bytes.Buffer
	if err := res.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var back Result
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || len(back.DocIDs("")) == 0 || len(back.DocIDs("other")) != 0 {
		t.Fatalf("json round trip: %v %s", err, js.String())
	}

	// The probe on step-4 is the fixed_probe_loss of step 4's evaluation.
	for _, ck := range []string{"step-4", "4", filepath.Join(dir, "checkpoints", "step-00000004")} {
		pr, err := Replay(dir, Options{Probe: true, Checkpoint: ck})
		if err != nil {
			t.Fatal(err)
		}
		p := pr.Probe
		if math.IsNaN(float64(p.LoggedLoss)) || p.Loss != p.LoggedLoss || p.Positions == 0 || !(p.TopKMass > 0 && p.TopKMass <= 1) || !(p.Entropy > 0) || p.LastStep != 6 {
			t.Errorf("--checkpoint %s: probe %+v", ck, p)
		}
	}
	if _, err := Replay(dir, Options{Probe: true, Checkpoint: "step-99"}); err == nil || !strings.Contains(err.Error(), "step 99") {
		t.Errorf("missing checkpoint: %v", err)
	}
	// last-good: the newest checkpoint the monitor stamped healthy.
	if pr, err := Replay(dir, Options{Probe: true, Checkpoint: "last-good"}); err != nil || pr.CkptStep != 6 {
		t.Errorf("--checkpoint last-good: %v, want the healthy step 6", err)
	}
}

// TestQuarantineWarnings: a replayed step trained under another overlay
// than the current one is named, by the start that trained it.
func TestQuarantineWarnings(t *testing.T) {
	man := &runlog.Manifest{QuarantineHash: "bbbb", Starts: []runlog.Start{{Step: 0, QuarantineHash: "none"}, {Step: 40, QuarantineHash: "bbbb"}}}
	for _, c := range []struct {
		from, to int
		now      string
		want     []string
	}{
		{21, 22, "bbbb", []string{"steps 21:22 were trained with quarantine overlay none, the batches are rebuilt with bbbb"}},
		{21, 22, "none", nil},
		{39, 42, "bbbb", []string{"steps 39:40 were trained with quarantine overlay none"}},
		{39, 42, "none", []string{"steps 41:42 were trained with quarantine overlay bbbb"}},
		{41, 42, "bbbb", nil},
	} {
		got := quarantineWarnings(man, c.from, c.to, c.now)
		if len(got) != len(c.want) {
			t.Errorf("%d:%d now %s: %q", c.from, c.to, c.now, got)
			continue
		}
		for i := range got {
			if !strings.HasPrefix(got[i], c.want[i]) {
				t.Errorf("%d:%d now %s: %q, want prefix %q", c.from, c.to, c.now, got[i], c.want[i])
			}
		}
	}
	// An older manifest without per-start hashes: the newest overlay.
	old := &runlog.Manifest{QuarantineHash: "aaaa", Starts: []runlog.Start{{Step: 0}}}
	if got := quarantineWarnings(old, 1, 1, "none"); len(got) != 1 {
		t.Errorf("older manifest: %q", got)
	}
}
