package train

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/checkpoint"
)

// rewriteState edits a checkpoint's state.json through a JSON map and
// rewrites SHA256SUMS to match, so only the values are wrong.
func rewriteState(t *testing.T, dir string, edit func(map[string]any)) {
	t.Helper()
	p := filepath.Join(dir, checkpoint.StateFile)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	if b, err = json.MarshalIndent(m, "", "  "); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	resum(t, dir)
}

// resum rewrites SHA256SUMS for the files it lists.
func resum(t *testing.T, dir string) {
	t.Helper()
	var sums strings.Builder
	for _, f := range []string{checkpoint.ModelFile, checkpoint.OptimizerFile, checkpoint.EMAFile, checkpoint.StateFile, checkpoint.HFConfigFile} {
		fmt.Fprintf(&sums, "%s  %s\n", fileSum(t, dir, f), f)
	}
	if err := os.WriteFile(filepath.Join(dir, checkpoint.SumsFile), []byte(sums.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestStateValidated: a state.json whose values cannot be true is refused
// when the checkpoint is loaded, and the error names the file and field.
func TestStateValidated(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	o := baseOpts(dir)
	o.Train.Steps, o.Train.EvalEvery = 8, 0
	o.Checkpoint = CheckpointConfig{Keep: 1}
	if _, err := Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(dir, "checkpoints", checkpoint.Name(8))
	for _, c := range []struct {
		field string
		edit  func(m map[string]any)
	}{
		{"", func(map[string]any) {}}, // untouched: loads
		{"format", func(m map[string]any) { m["format"] = 7 }},
		{"step", func(m map[string]any) { m["step"] = -1 }},
		{"step", func(m map[string]any) { m["step"] = 3; m["data"].(map[string]any)["next_fill_step"] = 3 }}, // not the directory's step
		{"kind", func(m map[string]any) { m["kind"] = "forever" }},
		{"tokens_seen", func(m map[string]any) { m["tokens_seen"] = -128 }},
		{"wall_time", func(m map[string]any) { m["wall_time"] = -1.5 }},
		{"data.next_fill_step", func(m map[string]any) { m["data"].(map[string]any)["next_fill_step"] = 9 }},
		{"adam_steps", func(m map[string]any) { m["adam_steps"] = -2 }},
		{"loss_ema_steps", func(m map[string]any) { m["loss_ema_steps"] = 80 }},
		{"skipped_updates", func(m map[string]any) { m["skipped_updates"] = 9 }},
		{"clipped_updates", func(m map[string]any) { m["clipped_updates"] = -1 }},
		{"grad_clip_window", func(m map[string]any) { m["grad_clip_window"] = make([]bool, 9) }},
		{"schedule.batch_size", func(m map[string]any) { m["schedule"].(map[string]any)["batch_size"] = -4 }},
		{"health.status", func(m map[string]any) { m["health"] = map[string]any{"status": "great"} }},
		{"ema_beta", func(m map[string]any) { m["ema_beta"] = 1.5 }},
	} {
		t.Run(c.field, func(t *testing.T) {
			ck := filepath.Join(t.TempDir(), checkpoint.Name(8))
			copyDir(t, src, ck)
			rewriteState(t, ck, c.edit)
			_, err := checkpoint.Load(ck)
			if c.field == "" {
				if err != nil {
					t.Fatalf("valid state refused: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), filepath.Join(ck, checkpoint.StateFile)) || !strings.Contains(err.Error(), "field "+c.field+":") {
				t.Errorf("got %v, want an error naming %s and field %s", err, filepath.Join(ck, checkpoint.StateFile), c.field)
			}
		})
	}
}

// TestNegativeStepNeverTruncatesMetrics: a checkpoint whose state.json says
// step -1 is refused; the run stops and metrics.jsonl is left as it was
// (the old code resumed at step -1 and truncated all of it).
func TestNegativeStepNeverTruncatesMetrics(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	o := baseOpts(dir)
	o.Train.Steps = 4
	o.Checkpoint = CheckpointConfig{Keep: 1} // only the final checkpoint
	if _, err := Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	ck := filepath.Join(dir, "checkpoints", checkpoint.Name(4))
	rewriteState(t, ck, func(m map[string]any) { m["step"] = -1 })
	before, _ := os.ReadFile(filepath.Join(dir, "metrics.jsonl"))
	o.Train.Steps = 8
	_, err := Run(context.Background(), o)
	if err == nil || !strings.Contains(err.Error(), filepath.Join(ck, checkpoint.StateFile)) || !strings.Contains(err.Error(), "field step") {
		t.Errorf("got %v, want a refusal naming state.json and its step", err)
	}
	var ce *checkpoint.Error
	if !errors.As(err, &ce) {
		t.Errorf("no valid checkpoint is not a CheckpointError: %v", err)
	}
	if after, _ := os.ReadFile(filepath.Join(dir, "metrics.jsonl")); !bytes.Equal(before, after) || len(before) == 0 {
		t.Errorf("metrics.jsonl changed: %d bytes before, %d after", len(before), len(after))
	}
}

// TestHalfDeletedCheckpointsCleaned: checkpoints that lack a file are
// removed when the run resumes (never resumed from), except a permanent
// one, which is left alone with a warning; a corrupt checkpoint (all files
// there, one altered) and intact ones stay; a deletion cut short is
// cleared.
func TestHalfDeletedCheckpointsCleaned(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	o := baseOpts(dir)
	o.Train.Steps, o.Train.EvalEvery = 8, 0
	o.Checkpoint = CheckpointConfig{Every: 1, Keep: 10, PermanentEvery: 5}
	if _, err := Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(dir, "checkpoints")
	ck := func(s int) string { return filepath.Join(root, checkpoint.Name(s)) }
	os.Remove(filepath.Join(ck(1), checkpoint.StateFile))
	os.Remove(filepath.Join(ck(2), checkpoint.OptimizerFile))
	os.Remove(filepath.Join(ck(3), checkpoint.SumsFile))
	b, _ := os.ReadFile(filepath.Join(ck(4), checkpoint.ModelFile)) // corrupt, not half-deleted
	b[len(b)-3] ^= 1
	os.WriteFile(filepath.Join(ck(4), checkpoint.ModelFile), b, 0o644)
	os.Remove(filepath.Join(ck(5), checkpoint.OptimizerFile)) // permanent: trimmed by hand
	os.Remove(filepath.Join(ck(6), checkpoint.HFConfigFile))  // listed in SHA256SUMS
	trash := filepath.Join(root, checkpoint.DeletingPrefix+checkpoint.Name(3)+"-1")
	os.MkdirAll(trash, 0o755)
	os.WriteFile(filepath.Join(trash, checkpoint.ModelFile), []byte("x"), 0o644)

	// The newest checkpoint, half-deleted, is never resumed from.
	tmp := t.TempDir()
	copyDir(t, root, tmp)
	os.Remove(filepath.Join(tmp, checkpoint.Name(8), checkpoint.EMAFile))
	if l, err := checkpoint.Latest(tmp, nil); err != nil || l.State.Step != 7 {
		t.Errorf("resumed from %+v (%v), want step 7", l, err)
	}

	var log bytes.Buffer
	o.Logger = slog.New(slog.NewTextHandler(&log, nil))
	o.Train.Steps = 10
	o.Checkpoint = CheckpointConfig{Keep: 10}
	res, err := Run(context.Background(), o)
	if err != nil || !strings.HasSuffix(res.Checkpoint, checkpoint.Name(10)) {
		t.Fatalf("resume: %+v %v", res, err)
	}
	if !strings.Contains(log.String(), "resumed") || !strings.Contains(log.String(), ck(8)) {
		t.Errorf("did not resume from step 8: %s", log.String())
	}
	list, _ := checkpoint.ListDir(root)
	var steps []int
	for _, c := range list {
		steps = append(steps, c.Step)
	}
	if want := []int{10, 8, 7, 5, 4}; !slices.Equal(steps, want) {
		t.Errorf("checkpoints %v, want %v", steps, want)
	}
	for s, miss := range map[int]string{1: checkpoint.StateFile, 2: checkpoint.OptimizerFile, 3: checkpoint.SumsFile, 6: checkpoint.HFConfigFile} {
		if !strings.Contains(log.String(), fmt.Sprintf("path=%s missing=%s", ck(s), miss)) {
			t.Errorf("removal of %s (missing %s) not logged", ck(s), miss)
		}
	}
	if !strings.Contains(log.String(), "level=WARN") || !strings.Contains(log.String(), fmt.Sprintf("path=%s missing=%s", ck(5), checkpoint.OptimizerFile)) {
		t.Errorf("kept permanent checkpoint not warned about: %s", log.String())
	}
	if _, err := os.Stat(trash); !os.IsNotExist(err) {
		t.Errorf("interrupted deletion %s not cleared", trash)
	}
}

// TestKeepPolicyDeletionFailureIsWarning: an old checkpoint that cannot be
// deleted is a warning naming it, and the run goes on (it used to stop the
// run with "checkpoint keep policy", which the monitor turned into a SEV0).
func TestKeepPolicyDeletionFailureIsWarning(t *testing.T) {
	fail := errors.New("injected: device busy")
	for _, c := range []struct {
		name   string
		rename func(string, string) error
		remove func(string) error
		kept   []int // checkpoints left
		trash  bool  // a renamed directory left for the next start
	}{
		{"rename fails", func(string, string) error { return fail }, os.RemoveAll, []int{6, 4, 2}, false},
		{"remove fails", os.Rename, func(string) error { return fail }, []int{6, 4}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			restore := checkpoint.SetDeleteHooks(c.rename, c.remove)
			defer restore()
			dir := filepath.Join(t.TempDir(), "run")
			o := baseOpts(dir)
			o.Train.Steps, o.Train.EvalEvery = 6, 0
			o.Checkpoint = CheckpointConfig{Every: 2, Keep: 1}
			var log bytes.Buffer
			o.Logger = slog.New(slog.NewTextHandler(&log, nil))
			res, err := Run(context.Background(), o)
			if err != nil || res.Step != 6 {
				t.Fatalf("run: %+v %v", res, err)
			}
			root := filepath.Join(dir, "checkpoints")
			for _, s := range []int{2} {
				want := fmt.Sprintf("level=WARN msg=\"checkpoint keep policy: could not delete an old checkpoint\" path=%s", filepath.Join(root, checkpoint.Name(s)))
				if !strings.Contains(log.String(), want) || !strings.Contains(log.String(), fail.Error()) {
					t.Errorf("no warning %q: %s", want, log.String())
				}
			}
			list, _ := checkpoint.ListDir(root)
			var steps []int
			for _, x := range list {
				steps = append(steps, x.Step)
			}
			if !slices.Equal(steps, c.kept) {
				t.Errorf("checkpoints %v, want %v", steps, c.kept)
			}
			ents, _ := os.ReadDir(root)
			trash := 0
			for _, e := range ents {
				if strings.HasPrefix(e.Name(), checkpoint.DeletingPrefix) {
					trash++
				}
			}
			if (trash > 0) != c.trash {
				t.Errorf("%d renamed directories left, want any: %v", trash, c.trash)
			}
			// The next start clears what the failed removals left.
			restore()
			o.Train.Steps = 8
			if _, err := Run(context.Background(), o); err != nil {
				t.Fatal(err)
			}
			ents, _ = os.ReadDir(root)
			for _, e := range ents {
				if strings.HasPrefix(e.Name(), checkpoint.DeletingPrefix) {
					t.Errorf("%s not cleared at the next start", e.Name())
				}
			}
		})
	}
}
