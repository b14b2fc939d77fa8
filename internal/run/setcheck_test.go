package run

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/rewind"

	"github.com/kestrel-lm/kestrel/internal/config"
	"github.com/kestrel-lm/kestrel/internal/runlog"
)

// TestParseSetRanges: rewind --set refuses keys outside the settable knobs
// and values outside their section's range, naming the key.
func TestParseSetRanges(t *testing.T) {
	base := config.Default()
	for _, c := range []struct {
		flags []string
		want  string // "" = accepted
	}{
		{[]string{"checkpoint.keep=3"}, ""},
		{[]string{"checkpoint.keep=0"}, "checkpoint.keep must be >= 1"},
		{[]string{"train.val_fraction=0.5"}, "train.val_fraction cannot change mid-run"},
		{[]string{"train.probe_sequences=8"}, "train.probe_sequences cannot change mid-run"},
		{[]string{"optim.name=muon"}, ""}, // an optimizer swap on the checkpoint (internal/train/optswap.go)
		{[]string{"optim.name=nadamw"}, ""},
		{[]string{"optim.name=lion"}, `optim.name: unknown optimizer "lion"`},
		{[]string{"optim.nadam_momentum_decay=-1"}, "optim.nadam_momentum_decay must be a finite number >= 0"},
		{[]string{"run.seed=7"}, "section [run] cannot change mid-run"},
		{[]string{"train.loss_ema_beta=1.5"}, "train.loss_ema_beta must be in [0, 1)"},
		{[]string{"optim.max_grad_norm=-1"}, "optim.max_grad_norm"},
		{[]string{"monitor.window=0"}, "monitor.window"},
		{[]string{"init.necromancy=-1"}, "init.necromancy must be >= 0"},
		{[]string{"init.necromancy=2"}, ""},
		{[]string{"dash.addr=127.0.0.1:9000"}, ""},
		// Two keys of one section checked together, not one by one.
		{[]string{"optim.lr=1e-4", "optim.min_lr=1e-5"}, ""},
	} {
		_, err := ParseSet(c.flags, base)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("--set %v: %v", c.flags, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "--set "+strings.Split(c.flags[0], "=")[0])):
			t.Errorf("--set %v: err %v, want one naming the key and saying %q", c.flags, err, c.want)
		}
	}
}

// TestApplyInterventionsChecksLines: interventions.jsonl is checked like
// rewind --set when it is read — a hand-edited key outside the settable
// knobs (run.seed) or a value out of range (checkpoint.keep = 0) is an
// error naming the file, the line, the intervention and the key, and the
// config is not changed silently.
func TestApplyInterventionsChecksLines(t *testing.T) {
	base := config.Default()
	for _, c := range []struct {
		name, set, want string
	}{
		{"seed", `{"run.seed":"7"}`, "set run.seed=7: run.seed: section [run] cannot change mid-run"},
		{"keep", `{"checkpoint.keep":"0"}`, "set checkpoint.keep=0: checkpoint.keep must be >= 1"},
		{"val", `{"train.val_fraction":"0.5"}`, "set train.val_fraction=0.5: train.val_fraction cannot change mid-run"},
		{"type", `{"optim.lr":"fast"}`, "set optim.lr=fast"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			lines := `{"id":"rewind-1","kind":"rewind","time":"t","from_step":20,"to_step":10,"checkpoint":"checkpoints/step-00000010"}` + "\n\n" +
				fmt.Sprintf(`{"id":"rewind-2","kind":"rewind","time":"t","from_step":30,"to_step":20,"set":%s,"checkpoint":"checkpoints/step-00000020"}`, c.set) + "\n"
			if err := os.WriteFile(filepath.Join(dir, runlog.InterventionsFile), []byte(lines), 0o644); err != nil {
				t.Fatal(err)
			}
			_, _, err := ApplyInterventions(base, dir)
			want := filepath.Join(dir, runlog.InterventionsFile) + ":3: intervention rewind-2: " + c.want
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("got %v\nwant %q", err, want)
			}
		})
	}
	// A superseded intervention's hand-edited key is refused too.
	dir := t.TempDir()
	lines := `{"id":"rewind-1","kind":"rewind","time":"t","from_step":20,"to_step":10,"set":{"run.seed":"7"},"checkpoint":"checkpoints/step-00000010"}` + "\n" +
		`{"id":"rewind-2","kind":"rewind","time":"t","from_step":30,"to_step":5,"checkpoint":"checkpoints/step-00000005"}` + "\n"
	os.WriteFile(filepath.Join(dir, runlog.InterventionsFile), []byte(lines), 0o644)
	if _, _, err := ApplyInterventions(base, dir); err == nil || !strings.Contains(err.Error(), ":1: intervention rewind-1: set run.seed=7") {
		t.Errorf("superseded run.seed: %v", err)
	}
}

// TestRewindSetRangeRefused: kestrel rewind --set checkpoint.keep=0 is
// refused before anything is written, so the next train is not the one
// to fail.
func TestRewindSetRangeRefused(t *testing.T) {
	t.Setenv("KESTREL_DATA", "/work/shared/data")
	cfg := tinyRun(8)
	cfg.Checkpoint.Every = 4
	cfg.Monitor.SQLite, cfg.Monitor.TensorBoard, cfg.Monitor.TraceSteps = false, false, 0
	dir := filepath.Join(t.TempDir(), "run")
	if _, err := Train(context.Background(), cfg, dir, Options{Logger: quietLog(), Stdout: io.Discard}); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(filepath.Join(dir, "metrics.jsonl"))
	for _, bad := range []string{"checkpoint.keep=0", "train.val_fraction=0.5"} {
		_, err := rewind.Rewind(dir, rewind.Options{To: "4", SetFlags: []string{bad}, CheckSet: CheckRewindSet})
		if err == nil || !strings.Contains(err.Error(), strings.Split(bad, "=")[0]) {
			t.Errorf("--set %s: %v", bad, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, runlog.InterventionsFile)); err == nil {
		t.Error("a refused --set wrote an intervention")
	}
	if after, _ := os.ReadFile(filepath.Join(dir, "metrics.jsonl")); string(after) != string(before) {
		t.Error("a refused --set moved metrics lines")
	}
}

// TestStartCompletesPendingRewind: a rewind that a crash left half done
// (its pending record written, nothing moved) is completed, with a
// warning, when the run next starts; the run then resumes from the
// rewind's checkpoint with its overrides applied.
func TestStartCompletesPendingRewind(t *testing.T) {
	t.Setenv("KESTREL_DATA", "/work/shared/data")
	cfg := tinyRun(8)
	cfg.Checkpoint.Every, cfg.Checkpoint.Keep = 4, 5
	cfg.Monitor.SQLite, cfg.Monitor.TensorBoard, cfg.Monitor.TraceSteps = false, false, 0
	dir := filepath.Join(t.TempDir(), "run")
	if _, err := Train(context.Background(), cfg, dir, Options{Logger: quietLog(), Stdout: io.Discard}); err != nil {
		t.Fatal(err)
	}
	pending := `{"id":"rewind-1","kind":"rewind","time":"t","from_step":8,"to_step":4,"set":{"optim.max_grad_norm":"0.05"},` +
		`"checkpoint":"checkpoints/step-00000004","archived_checkpoints":["checkpoints-archive/rewind-1/step-00000008"],"metrics_archive":"metrics.archive-rewind-1.jsonl"}` + "\n"
	if err := os.WriteFile(filepath.Join(dir, rewind.PendingFile), []byte(pending), 0o644); err != nil {
		t.Fatal(err)
	}
	var logs strings.Builder
	prev := slog.Default()
	slog.SetDefault(logTo(&logs))
	got, ivs, err := ApplyInterventions(cfg, dir)
	slog.SetDefault(prev)
	if err != nil {
		t.Fatal(err)
	}
	if len(ivs) != 1 || ivs[0].ID != "rewind-1" || got.Optim.MaxGradNorm != 0.05 || !strings.Contains(logs.String(), "half done") {
		t.Fatalf("interventions %+v, max_grad_norm %g, log %q", ivs, got.Optim.MaxGradNorm, logs.String())
	}
	for _, p := range []string{"checkpoints-archive/rewind-1/step-00000008", "metrics.archive-rewind-1.jsonl"} {
		if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
			t.Errorf("not completed: %v", err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, rewind.PendingFile)); err == nil {
		t.Error("the pending record is still there")
	}
	res, err := Train(context.Background(), cfg, dir, Options{Logger: quietLog(), Stdout: io.Discard})
	if err != nil || !res.Resumed || res.Step != 8 {
		t.Fatalf("train after the completed rewind: %+v, %v", res, err)
	}
}

func logTo(w io.Writer) *slog.Logger { return slog.New(slog.NewTextHandler(w, nil)) }
