package branch

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/checkpoint"
	"github.com/kestrel-lm/kestrel/internal/config"
	"github.com/kestrel-lm/kestrel/internal/rewind"
	"github.com/kestrel-lm/kestrel/internal/run"
	"github.com/kestrel-lm/kestrel/internal/runlock"
	"github.com/kestrel-lm/kestrel/internal/runlog"
	"github.com/kestrel-lm/kestrel/internal/testrun"
	"github.com/kestrel-lm/kestrel/internal/train"
)

// tinyRun is a byte-level run small enough to train 12 steps in a second.
func tinyRun() config.Config {
	cfg := testrun.Bytes()
	cfg.Data.Val = valFile()
	cfg.Train.Steps, cfg.Train.EvalEvery = 12, 4
	cfg.Optim.Warmup = 3
	cfg.Checkpoint.Every, cfg.Checkpoint.Keep = 4, 5
	cfg.Monitor.Window, cfg.Monitor.SpikeFollow, cfg.Monitor.Cooldown = 8, 4, 4
	return cfg
}

var (
	parentOnce sync.Once
	parentDir  string
	parentErr  error
	testTmp    string // the shared parent and the validation text
)

// TestMain writes the validation text and removes it and the shared
// parent run after the tests.
func TestMain(m *testing.M) {
	var err error
	if testTmp, err = os.MkdirTemp("", "kestrel-branch-test-"); err != nil {
		panic(err)
	}
	code := m.Run()
	os.RemoveAll(testTmp)
	os.Exit(code)
}

// valFile is a 16 KiB validation text (Shakespeare's first lines), so
// that the full evaluation at train.steps stays fast.
func valFile() string {
	p := filepath.Join(testTmp, "val.txt")
	if _, err := os.Stat(p); err == nil {
		return p
	}
	if _, err := testrun.ValText(testTmp); err != nil {
		panic(err)
	}
	return p
}

// parentRun trains tinyRun once per test binary and returns its directory
// (the tests only read it: TestBranchReproducesParent checks that).
func parentRun(t *testing.T) string {
	t.Helper()
	parentOnce.Do(func() {
		parentDir = filepath.Join(testTmp, "parent")
		_, parentErr = run.Train(context.Background(), tinyRun(), parentDir, run.Options{Logger: testrun.Quiet()})
	})
	if parentErr != nil {
		t.Fatal(parentErr)
	}
	return parentDir
}

// snapshot hashes every file under dir (with its mode and modification
// time), so a test can tell that nothing there changed.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		sum := ""
		if fi.Mode().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			h := sha256.Sum256(b)
			sum = hex.EncodeToString(h[:])
		}
		out[p] = fi.Mode().String() + " " + fi.ModTime().String() + " " + sum
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// stepLosses reads train_loss_raw by step, and val_loss by step, from a
// run's metrics.jsonl, keeping each value's JSON text (bit-exact compare).
func stepLosses(t *testing.T, dir string) (train, val map[int]string) {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "metrics.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	train, val = map[int]string{}, map[int]string{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		var step int
		if err := json.Unmarshal(m["step"], &step); err != nil {
			t.Fatal(err)
		}
		if v, ok := m["train_loss_raw"]; ok {
			train[step] = string(v)
		}
		if v, ok := m["val_loss"]; ok {
			val[step] = string(v)
		}
	}
	return train, val
}

// stopAt cancels the run after a step (the trainer checkpoints and returns).
type stopAt struct {
	step   int
	cancel func()
}

func (s stopAt) OnStep(m *runlog.Step) error {
	if m.Step == s.step {
		s.cancel()
	}
	return nil
}
func (stopAt) OnEval(*runlog.Eval) error             { return nil }
func (stopAt) OnCheckpoint(*runlog.Checkpoint) error { return nil }

// TestBranchReproducesParent: a branch with no change, from step 4 for 6
// steps, interrupted at step 7 and continued by rerunning kestrel branch,
// reproduces the parent's train_loss_raw and val_loss bit for bit over
// steps 5..10, ends at step 10, records its parent (run, step, the
// checkpoint's SHA256SUMS digest) in branch.json and manifest.json, and
// leaves every file of the parent as it was. kestrel train on the
// finished branch trains nothing.
func TestBranchReproducesParent(t *testing.T) {
	parent := parentRun(t)
	before := snapshot(t, parent)
	out := filepath.Join(t.TempDir(), "canary")
	b, err := Prepare(Options{Parent: parent, From: "step-4", Out: out, Steps: 6, Logger: testrun.Quiet()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	res, err := run.Train(ctx, b.Config, b.Dir, run.Options{Logger: testrun.Quiet(), Observers: []train.Observer{stopAt{7, cancel}}})
	cancel()
	if err != nil || !res.Interrupted || res.Step != 7 {
		t.Fatalf("interrupted branch: res %+v, err %v", res, err)
	}
	// Rerunning the same kestrel branch continues it.
	b2, err := Prepare(Options{Parent: parent, From: "step-4", Out: out, Steps: 6, Logger: testrun.Quiet()})
	if err != nil || !b2.Resumed || !strings.HasPrefix(b2.Describe(), "continuing branch") {
		t.Fatalf("rerun of the interrupted branch: %+v, %v", b2, err)
	}
	if res, err = run.Train(context.Background(), b2.Config, b2.Dir, run.Options{Logger: testrun.Quiet()}); err != nil || res.Step != 10 {
		t.Fatalf("resumed branch: res %+v, err %v", res, err)
	}
	cfg, err := config.Load(filepath.Join(out, "config.toml"), nil) // as kestrel train --config BRANCH/config.toml --out BRANCH
	if err != nil {
		t.Fatal(err)
	}
	pt, pv := stepLosses(t, parent)
	bt, bv := stepLosses(t, out)
	for s := 1; s <= 10; s++ {
		if bt[s] == "" || bt[s] != pt[s] {
			t.Errorf("step %d: branch train_loss_raw %s, parent %s", s, bt[s], pt[s])
		}
	}
	if _, ok := bt[11]; ok {
		t.Errorf("the branch trained past its until_step 10: %v", bt)
	}
	if bv[8] == "" || bv[8] != pv[8] {
		t.Errorf("val_loss at step 8: branch %s, parent %s", bv[8], pv[8])
	}
	if bv[10] == "" {
		t.Errorf("no evaluation at the branch's last step 10: %v", bv)
	}
	sums, err := runlog.HashFile(filepath.Join(parent, "checkpoints", checkpoint.Name(4), checkpoint.SumsFile))
	if err != nil {
		t.Fatal(err)
	}
	m, err := runlog.ReadManifest(out)
	if err != nil {
		t.Fatal(err)
	}
	if p := m.Parent; p == nil || p.Run != parent || p.Step != 4 || p.UntilStep != 10 || p.SumsSHA256 != sums || len(p.Set) != 0 {
		t.Errorf("manifest parent %+v; want run %s, step 4, until 10, sums %s", m.Parent, parent, sums)
	}
	// The parent's samples up to the branch point come along, then the branch's own.
	if ps, bs := samplesSteps(t, parent), samplesSteps(t, out); len(ps) > 0 && (bs[0] != ps[0] || bs[len(bs)-1] != 10) {
		t.Errorf("samples.jsonl steps: parent %v, branch %v", ps, bs)
	}
	// kestrel train on the finished branch: nothing to do, nothing written.
	mid := snapshot(t, filepath.Join(out, "checkpoints"))
	if res, err = run.Train(context.Background(), cfg, out, run.Options{Logger: testrun.Quiet()}); err != nil || res.Step != 10 {
		t.Fatalf("rerun of a finished branch: res %+v, err %v", res, err)
	}
	if after := snapshot(t, filepath.Join(out, "checkpoints")); !sameSnap(mid, after) {
		t.Errorf("a rerun of the finished branch changed its checkpoints")
	}
	if after := snapshot(t, parent); !sameSnap(before, after) {
		for k, v := range after {
			if before[k] != v {
				t.Errorf("parent file %s changed: %s → %s", k, before[k], v)
			}
		}
		t.Errorf("the parent changed (%d files before, %d after)", len(before), len(after))
	}
}

func sameSnap(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestBranchChangeAndRefusals: a changed LR diverges from the parent after
// the branch point (and not before), and is recorded; bad --set keys,
// values, step counts, checkpoints and output paths are refused naming
// what is wrong, with nothing written; an earlier branch is replaced.
func TestBranchChangeAndRefusals(t *testing.T) {
	parent := parentRun(t)
	tmp := t.TempDir()
	out := filepath.Join(tmp, "lr")
	b, err := Prepare(Options{Parent: parent, From: "4", Out: out, Steps: 4, Set: []string{"optim.lr=1e-2"}})
	if err != nil {
		t.Fatal(err)
	}
	if b.Config.Optim.LR != 1e-2 || b.Parent.UntilStep != 8 || strings.Join(b.Parent.Set, " ") != "optim.lr=1e-2" {
		t.Fatalf("branch %+v, lr %g", b.Parent, b.Config.Optim.LR)
	}
	if _, err := run.Train(context.Background(), b.Config, b.Dir, run.Options{Logger: testrun.Quiet()}); err != nil {
		t.Fatal(err)
	}
	pt, _ := stepLosses(t, parent)
	bt, _ := stepLosses(t, out)
	if bt[4] != pt[4] || bt[5] != pt[5] { // step 5's loss is measured before its update
		t.Errorf("before the change: branch %s %s, parent %s %s", bt[4], bt[5], pt[4], pt[5])
	}
	if bt[6] == pt[6] || bt[8] == "" || bt[9] != "" {
		t.Errorf("after the change: branch step 6 %s (parent %s), step 8 %q, step 9 %q", bt[6], pt[6], bt[8], bt[9])
	}
	junk := filepath.Join(tmp, "junk")
	if err := os.MkdirAll(junk, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(junk, "notes.txt"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	fresh := filepath.Join(tmp, "fresh")
	for _, tc := range []struct {
		name string
		o    Options
		want string
	}{
		{"model key", Options{Set: []string{"model.d_model=64"}}, "model.d_model"},
		{"unknown key", Options{Set: []string{"optim.nosuch=1"}}, "optim.nosuch"},
		{"bad value", Options{Set: []string{"optim.lr=fast"}}, "optim.lr"},
		{"out of range", Options{Set: []string{"checkpoint.keep=0"}}, "checkpoint.keep"},
		{"val split", Options{Set: []string{"train.val_fraction=0.2"}}, "train.val_fraction"},
		{"no equals", Options{Set: []string{"optim.lr"}}, "optim.lr"},
		{"data mixture on bytes", Options{Set: []string{`data.stages=[{start_step=5, weights={a=1}}]`}}, "data.stages"},
		{"zero steps", Options{Steps: -1}, "--steps"},
		{"past train.steps", Options{Steps: 20}, "train.steps = 12"},
		{"no checkpoint", Options{From: "step-3"}, "step 3"},
		{"not a run", Options{Parent: junk}, "junk"},
		{"user dir", Options{Out: junk}, "branch.json"},
		{"inside the parent", Options{Out: filepath.Join(parent, "b")}, "only read"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := Options{Parent: parent, From: "step-4", Out: fresh, Steps: 2}
			if tc.o.Set != nil {
				o.Set = tc.o.Set
			}
			if tc.o.Steps != 0 {
				o.Steps = tc.o.Steps
			}
			if tc.o.From != "" {
				o.From = tc.o.From
			}
			if tc.o.Parent != "" {
				o.Parent = tc.o.Parent
			}
			if tc.o.Out != "" {
				o.Out = tc.o.Out
			}
			_, err := Prepare(o)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want one naming %q", err, tc.want)
			}
			if _, serr := os.Stat(fresh); serr == nil {
				t.Errorf("%s was written", fresh)
			}
		})
	}
	if b, err = Prepare(Options{Parent: parent, From: "step-8", Out: out, Steps: 2}); err != nil || b.Parent.Step != 8 {
		t.Fatalf("replacing an earlier branch: %+v, %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(out, "checkpoints", checkpoint.Name(4))); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the earlier branch's checkpoint is still there after the replacement: %v", err)
	}
	// An earlier branch a trainer holds is not replaced.
	lk, err := runlock.Acquire(out, testrun.Quiet())
	if err != nil {
		t.Fatal(err)
	}
	defer lk.Release()
	if _, err := Prepare(Options{Parent: parent, From: "step-4", Out: out, Steps: 2}); err == nil || !strings.Contains(err.Error(), "not replaced") {
		t.Errorf("replacing a branch a trainer holds: %v", err)
	}
	if _, err := os.Stat(filepath.Join(out, "checkpoints", checkpoint.Name(8))); err != nil {
		t.Errorf("the held branch was touched: %v", err)
	}
}

// samplesSteps lists the steps of a run's samples.jsonl lines.
func samplesSteps(t *testing.T, dir string) []int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, runlog.SamplesFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var g struct{ Step int }
		if err := json.Unmarshal([]byte(l), &g); err != nil {
			t.Fatal(err)
		}
		out = append(out, g.Step)
	}
	return out
}

// TestBranchAfterRewind: a branch from a parent that was rewound to step 8
// with the batches of steps 9..10 skipped and an LR ×0.5 for 3 steps
// reproduces the parent's trajectory after the rewind bit for bit (the
// interventions come along, so the data offset and the LR scale apply),
// and its first steps are the parent's post-rewind steps, not the
// abandoned ones.
func TestBranchAfterRewind(t *testing.T) {
	parent := filepath.Join(t.TempDir(), "rewound")
	cfg := tinyRun()
	cfg.Samples.Enabled = false // not what this test is about; it halves the time
	if _, err := run.Train(context.Background(), cfg, parent, run.Options{Logger: testrun.Quiet()}); err != nil {
		t.Fatal(err)
	}
	abandoned, _ := stepLosses(t, parent)
	ro := rewind.Options{CheckSet: run.CheckRewindSet}
	ro.To, ro.SkipFrom, ro.SkipTo, ro.LRScale, ro.LRSteps = "8", 9, 10, 0.5, 3
	if _, err := rewind.Rewind(parent, ro); err != nil {
		t.Fatal(err)
	}
	if _, err := run.Train(context.Background(), cfg, parent, run.Options{Logger: testrun.Quiet()}); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "b")
	b, err := Prepare(Options{Parent: parent, From: "step-8", Out: out, Steps: 4, Logger: testrun.Quiet()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := run.Train(context.Background(), b.Config, b.Dir, run.Options{Logger: testrun.Quiet()}); err != nil {
		t.Fatal(err)
	}
	pt, _ := stepLosses(t, parent)
	bt, _ := stepLosses(t, out)
	if pt[9] == abandoned[9] {
		t.Fatalf("the rewind changed nothing at step 9 (%s)", pt[9])
	}
	for s := 9; s <= 12; s++ {
		if bt[s] == "" || bt[s] != pt[s] {
			t.Errorf("step %d: branch %s, rewound parent %s (abandoned %s)", s, bt[s], pt[s], abandoned[s])
		}
	}
}
