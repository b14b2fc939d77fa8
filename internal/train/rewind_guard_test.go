package train

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/rewind"
	"github.com/kestrel-lm/kestrel/internal/runlog"
)

// trainedRun is a 12-step run with checkpoints at 4, 8 and 12.
func trainedRun(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "run")
	if _, err := Run(context.Background(), baseOpts(dir)); err != nil {
		t.Fatal(err)
	}
	return dir
}

// copyTree copies the run directory src to dst (regular files and
// directories).
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.Walk(src, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		to := filepath.Join(dst, rel)
		if fi.IsDir() {
			return os.MkdirAll(to, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(to, b, fi.Mode())
	})
	if err != nil {
		t.Fatal(err)
	}
}

// treeState is every file of a run directory (but the lock) with its
// content, interventions.jsonl's time stamps left out.
func treeState(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() || fi.Name() == "lock" {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		out[rel] = string(b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// checkArchivesExist fails when an intervention of dir names an archive
// that does not exist.
func checkArchivesExist(t *testing.T, dir string) {
	t.Helper()
	ivs, err := runlog.ReadInterventions(dir)
	if err != nil {
		t.Fatalf("interventions.jsonl unreadable: %v", err)
	}
	for _, iv := range ivs {
		names := append([]string{}, iv.ArchivedCheckpoints...)
		if iv.MetricsArchive != "" {
			names = append(names, iv.MetricsArchive)
		}
		for _, n := range names {
			if _, err := os.Stat(filepath.Join(dir, n)); err != nil {
				t.Errorf("intervention %s names %s, which does not exist", iv.ID, n)
			}
		}
	}
}

// TestRewindFailureLeavesNoDanglingIntervention: a rewind that fails while
// it moves the checkpoints aside (the archive directory cannot be made)
// leaves no intervention naming an archive that does not exist, and loses
// no metrics line.
func TestRewindFailureLeavesNoDanglingIntervention(t *testing.T) {
	dir := trainedRun(t)
	before, _ := os.ReadFile(filepath.Join(dir, "metrics.jsonl"))
	if err := os.WriteFile(filepath.Join(dir, rewind.ArchiveDir), []byte("in the way\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := rewind.Rewind(dir, rewind.Options{To: "4", SkipFrom: 6, SkipTo: 7}); err == nil {
		t.Fatal("the rewind succeeded although its archive directory could not be made")
	}
	checkArchivesExist(t, dir)
	kept, _ := os.ReadFile(filepath.Join(dir, "metrics.jsonl"))
	arch, _ := os.ReadFile(filepath.Join(dir, runlog.MetricsArchiveName("rewind-1")))
	if len(kept)+len(arch) != len(before) {
		t.Errorf("metrics: %d kept + %d archived bytes, had %d", len(kept), len(arch), len(before))
	}
}

// TestRewindCrashAtEachStage: a rewind stopped after each of its stages
// (as a crash would stop it) never leaves an intervention naming a missing
// archive; rewind.Complete then finishes it, and the run directory is the
// one an uninterrupted rewind leaves, byte for byte (times aside). A torn
// last line of interventions.jsonl (a crash inside the append) is repaired
// the same way.
func TestRewindCrashAtEachStage(t *testing.T) {
	src := trainedRun(t)
	o := rewind.Options{To: "4", SkipFrom: 6, SkipTo: 7, LRScale: 0.5, LRSteps: 2, Reason: "test"}
	clean := filepath.Join(t.TempDir(), "clean")
	copyTree(t, src, clean)
	if _, err := rewind.Rewind(clean, o); err != nil {
		t.Fatal(err)
	}
	want := treeState(t, clean)
	if _, ok := want[rewind.PendingFile]; ok {
		t.Fatal("an uninterrupted rewind left its pending file")
	}
	for _, stage := range []string{"pending", "metrics", "checkpoints", "recorded", "torn"} {
		t.Run(stage, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "run")
			copyTree(t, src, dir)
			hook := stage
			if stage == "torn" {
				hook = "checkpoints"
			}
			rewind.SetStageHook(func(s string) error {
				if s == hook {
					return errors.New("simulated crash")
				}
				return nil
			})
			_, err := rewind.Rewind(dir, o)
			rewind.SetStageHook(nil)
			if err == nil || !strings.Contains(err.Error(), "half done") {
				t.Fatalf("rewind stopped after %s: err %v, want one saying it is half done", stage, err)
			}
			if stage == "torn" { // the crash hit inside the append
				pend, _ := os.ReadFile(filepath.Join(dir, rewind.PendingFile))
				f, _ := os.OpenFile(filepath.Join(dir, runlog.InterventionsFile), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
				f.Write(pend[:len(pend)/2])
				f.Close()
			} else {
				checkArchivesExist(t, dir)
			}
			if _, err := os.Stat(filepath.Join(dir, rewind.PendingFile)); err != nil {
				t.Fatalf("no pending record after a crash in the rewind: %v", err)
			}
			var logs strings.Builder
			iv, err := rewind.Complete(dir, nil, slogTo(&logs))
			if err != nil || iv == nil || iv.ID != "rewind-1" {
				t.Fatalf("CompleteRewind: %+v, %v", iv, err)
			}
			if stage != "recorded" && !strings.Contains(logs.String(), "half done") {
				t.Errorf("no warning: %q", logs.String())
			}
			checkArchivesExist(t, dir)
			got := treeState(t, dir)
			for _, m := range []map[string]string{got, want} {
				ivs, err := runlog.ParseInterventions([]byte(m[runlog.InterventionsFile]), "x")
				if err != nil || len(ivs) != 1 {
					t.Fatalf("interventions %+v, %v", ivs, err)
				}
				ivs[0].Time = ""
				b, _ := json.Marshal(ivs[0])
				m[runlog.InterventionsFile] = string(b)
			}
			for k, v := range want {
				if got[k] != v {
					t.Errorf("%s differs from an uninterrupted rewind's", k)
				}
			}
			for k := range got {
				if _, ok := want[k]; !ok {
					t.Errorf("%s left behind", k)
				}
			}
			if iv, err := rewind.Complete(dir, nil, nil); iv != nil || err != nil {
				t.Errorf("a second rewind.Complete did something: %+v, %v", iv, err)
			}
		})
	}
}

// TestSkipWindowBounds: skip windows past rewind.MaxSkipStep, or adding up past
// it, are refused — by rewind.Rewind before anything is written, and by the
// trainer when interventions.jsonl was edited by hand (an error naming the
// file, not a panic); the data offset never overflows.
func TestSkipWindowBounds(t *testing.T) {
	dir := trainedRun(t)
	for _, c := range []struct {
		from, to int
		want     string
	}{
		{31, math.MaxInt64, "MaxSkipStep"},
		{31, rewind.MaxSkipStep + 1, "MaxSkipStep"},
	} {
		if _, err := rewind.Rewind(dir, rewind.Options{To: "4", SkipFrom: c.from, SkipTo: c.to}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("--skip-steps %d:%d: %v, want %q", c.from, c.to, err, c.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, runlog.InterventionsFile)); err == nil {
		t.Fatal("a refused rewind wrote an intervention")
	}
	// Two windows that each fit but add up past the bound.
	if _, err := rewind.Rewind(dir, rewind.Options{To: "8", SkipFrom: 10, SkipTo: rewind.MaxSkipStep - 10}); err != nil {
		t.Fatal(err)
	}
	if _, err := rewind.Rewind(dir, rewind.Options{To: "4", SkipFrom: 5, SkipTo: 100}); err != nil {
		t.Fatal(err) // supersedes the first: the offsets do not add
	}
	ivs, _ := runlog.ReadInterventions(dir)
	if i, err := rewind.Check(ivs); err != nil {
		t.Fatalf("CheckInterventions(%d): %v", i, err)
	}

	// A hand-edited line: the trainer refuses it, naming the file.
	line := fmt.Sprintf(`{"id":"rewind-9","kind":"rewind","time":"t","from_step":12,"to_step":8,"skip_from":31,"skip_to":%d,"skip_steps":%d,"checkpoint":"checkpoints/step-00000008"}`,
		math.MaxInt64, math.MaxInt64-30)
	f, err := os.OpenFile(filepath.Join(dir, runlog.InterventionsFile), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(line + "\n")
	f.Close()
	_, err = Run(context.Background(), baseOpts(dir))
	if err == nil || !strings.Contains(err.Error(), runlog.InterventionsFile) || !strings.Contains(err.Error(), "rewind-9") || !strings.Contains(err.Error(), "MaxSkipStep") {
		t.Fatalf("train on a hand-edited unbounded window: %v, want an error naming interventions.jsonl and rewind-9", err)
	}

	p := rewind.NewPlan([]runlog.Intervention{
		{ToStep: 1, SkipFrom: 2, SkipTo: rewind.MaxSkipStep, SkipSteps: rewind.MaxSkipStep - 1},
		{ToStep: 3, SkipFrom: 4, SkipTo: rewind.MaxSkipStep, SkipSteps: rewind.MaxSkipStep - 3},
	})
	if off := p.DataOffset(math.MaxInt32); off != rewind.MaxSkipStep {
		t.Errorf("dataOffset saturates at %d, want MaxSkipStep", off)
	}
}

// TestCheckInterventions: the checks a log of interventions passes and
// fails, with the index of the one at fault.
func TestCheckInterventions(t *testing.T) {
	w := func(id string, to, a, b int) runlog.Intervention {
		return runlog.Intervention{ID: id, ToStep: to, SkipFrom: a, SkipTo: b, SkipSteps: b - a + 1}
	}
	for _, c := range []struct {
		name string
		ivs  []runlog.Intervention
		bad  int
	}{
		{"none", nil, -1},
		{"ok", []runlog.Intervention{w("a", 4, 5, 9), {ID: "b", ToStep: 20}}, -1},
		{"past the bound", []runlog.Intervention{w("a", 4, 5, 9), w("b", 20, 31, rewind.MaxSkipStep+1)}, 1},
		{"before the checkpoint", []runlog.Intervention{w("a", 10, 5, 9)}, 0},
		{"sum past the bound", []runlog.Intervention{w("a", 4, 5, rewind.MaxSkipStep/2+10), w("b", 20, 21, rewind.MaxSkipStep/2+30)}, 1},
		{"superseded ones do not add", []runlog.Intervention{w("a", 20, 25, rewind.MaxSkipStep/2+10), w("b", 4, 5, rewind.MaxSkipStep/2+30)}, -1},
	} {
		i, err := rewind.Check(c.ivs)
		if (err != nil) != (c.bad >= 0) || (err != nil && i != c.bad) {
			t.Errorf("%s: index %d, err %v; want index %d", c.name, i, err, c.bad)
		}
	}
}

func slogTo(w io.Writer) *slog.Logger { return slog.New(slog.NewTextHandler(w, nil)) }
