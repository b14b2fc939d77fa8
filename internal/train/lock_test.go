package train

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/checkpoint"
	"github.com/kestrel-lm/kestrel/internal/datasrc"
	"github.com/kestrel-lm/kestrel/internal/runlock"
	"github.com/kestrel-lm/kestrel/internal/runlog"
)

// dirSums maps every file under dir (but the lock) to its SHA-256.
func dirSums(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() || info.Name() == runlock.FileName {
			return err
		}
		h, _, err := checkpoint.HashFile(p)
		rel, _ := filepath.Rel(dir, p)
		out[rel] = h
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func diffSums(a, b map[string]string) []string {
	var d []string
	for k, v := range a {
		if b[k] != v {
			d = append(d, k)
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			d = append(d, k+" (new)")
		}
	}
	return d
}

// secondTrainer starts another Run on the same directory from inside the
// first run's step s, and records what it did.
type secondTrainer struct {
	t       *testing.T
	step    int
	opts    Options
	err     error
	changed []string
	ran     bool
}

func (o *secondTrainer) OnStep(m *runlog.Step) error {
	if m.Step != o.step {
		return nil
	}
	o.ran = true
	before := dirSums(o.t, o.opts.Dir)
	_, o.err = Run(context.Background(), o.opts)
	o.changed = diffSums(before, dirSums(o.t, o.opts.Dir))
	return nil
}
func (*secondTrainer) OnEval(*runlog.Eval) error             { return nil }
func (*secondTrainer) OnCheckpoint(*runlog.Checkpoint) error { return nil }

// TestSecondTrainerRefused: a second trainer started on the directory of a
// running one is refused, naming the holder's pid and host and the lock
// file, and changes nothing there; the first run finishes unharmed.
func TestSecondTrainerRefused(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	second := &secondTrainer{t: t, step: 6, opts: baseOpts(dir)}
	second.opts.Checkpoint.Keep = 1 // its keep policy would prune the first run's checkpoints
	o := baseOpts(dir)
	o.Observers = []Observer{second}
	res, err := Run(context.Background(), o)
	if err != nil || res.Step != o.Train.Steps {
		t.Fatalf("first run: %+v %v", res, err)
	}
	if !second.ran {
		t.Fatal("the second trainer never started")
	}
	host, _ := os.Hostname()
	var held *runlock.HeldError
	if !errors.As(second.err, &held) {
		t.Fatalf("second trainer: %v, want a refusal", second.err)
	}
	for _, want := range []string{"pid " + strconv.Itoa(os.Getpid()), "host " + host, filepath.Join(dir, runlock.FileName)} {
		if !strings.Contains(second.err.Error(), want) {
			t.Errorf("refusal %q does not name %q", second.err, want)
		}
	}
	if len(second.changed) > 0 {
		t.Errorf("the refused trainer changed %v", second.changed)
	}
	list, _ := checkpoint.ListDir(filepath.Join(dir, "checkpoints"))
	if len(list) != 3 { // 4, 8 rolling (keep 5) and the final 12
		t.Errorf("checkpoints %v", list)
	}
	if _, err := os.Stat(filepath.Join(dir, runlock.FileName)); !os.IsNotExist(err) {
		t.Errorf("lock file left after the run: %v", err)
	}
}

// TestStaleLockTakenOver: a lock file left by a process that no longer
// runs (kill -9) does not stop the next run; the take-over is logged.
func TestStaleLockTakenOver(t *testing.T) {
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Skipf("cannot run true: %v", err)
	}
	dir := filepath.Join(t.TempDir(), "run")
	os.MkdirAll(dir, 0o755)
	host, _ := os.Hostname()
	stale := fmt.Sprintf(`{"pid":%d,"host":%q,"started":"2026-01-01T00:00:00Z"}`+"\n", cmd.Process.Pid, host)
	if err := os.WriteFile(filepath.Join(dir, runlock.FileName), []byte(stale), 0o644); err != nil {
		t.Fatal(err)
	}
	o := baseOpts(dir)
	o.Train.Steps = 2
	var log bytes.Buffer
	o.Logger = slog.New(slog.NewTextHandler(&log, nil))
	if _, err := Run(context.Background(), o); err != nil {
		t.Fatalf("stale lock: %v", err)
	}
	if !strings.Contains(log.String(), "stale") || !strings.Contains(log.String(), "previous_pid="+strconv.Itoa(cmd.Process.Pid)) {
		t.Errorf("take-over not logged: %s", log.String())
	}
	if _, err := os.Stat(filepath.Join(dir, runlock.FileName)); !os.IsNotExist(err) {
		t.Errorf("lock file left after the run: %v", err)
	}
}

// failAt stops the run with an error at a step.
type failAt int

func (f failAt) OnStep(m *runlog.Step) error {
	if m.Step == int(f) {
		return errors.New("observer failure")
	}
	return nil
}
func (failAt) OnEval(*runlog.Eval) error             { return nil }
func (failAt) OnCheckpoint(*runlog.Checkpoint) error { return nil }

// failingData is a data source whose batches fail from step index at on
// (a data error in the middle of a run; a source without validation data
// is refused before the run starts).
type failingData struct {
	datasrc.Source
	at int
}

func (f failingData) Fill(step, batch, row0, n int, inputs, targets, segIDs []int32, srcs []int) error {
	if step >= f.at {
		return errors.New("bad data")
	}
	return f.Source.Fill(step, batch, row0, n, inputs, targets, segIDs, srcs)
}

// lockSeen records the lock file of dir as the first step saw it.
type lockSeen struct {
	dir, content string
}

func (l *lockSeen) OnStep(m *runlog.Step) error {
	if m.Step == 1 {
		b, _ := os.ReadFile(filepath.Join(l.dir, runlock.FileName))
		l.content = string(b)
	}
	return nil
}
func (*lockSeen) OnEval(*runlog.Eval) error             { return nil }
func (*lockSeen) OnCheckpoint(*runlog.Checkpoint) error { return nil }

// TestLockReleasedOnEveryExit: whichever way Run returns, the lock file is
// gone and the next Run can take the directory.
func TestLockReleasedOnEveryExit(t *testing.T) {
	for _, c := range []struct {
		name    string
		mod     func(*Options, context.CancelFunc)
		wantErr bool
	}{
		{"success", func(*Options, context.CancelFunc) {}, false},
		{"nan stop", func(o *Options, _ context.CancelFunc) { o.Debug.NaNAtStep = 3 }, true},
		{"observer error", func(o *Options, _ context.CancelFunc) { o.Observers = []Observer{failAt(2)} }, true},
		{"ctrl-c", func(o *Options, cancel context.CancelFunc) { o.Observers = []Observer{stopAt{step: 2, cancel: cancel}} }, false},
		{"bad data", func(o *Options, _ context.CancelFunc) { o.Data = failingData{o.Data, 2} }, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "run")
			o := baseOpts(dir)
			o.Train.Steps = 4
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			c.mod(&o, cancel)
			seen := &lockSeen{dir: dir}
			o.Observers = append([]Observer{seen}, o.Observers...)
			_, err := Run(ctx, o)
			if (err != nil) != c.wantErr {
				t.Fatalf("run error %v, want error %v", err, c.wantErr)
			}
			if want := fmt.Sprintf(`"pid":%d`, os.Getpid()); !strings.Contains(seen.content, want) {
				t.Errorf("lock file during the run: %q, want it to name %s", seen.content, want)
			}
			if _, err := os.Stat(filepath.Join(dir, runlock.FileName)); !os.IsNotExist(err) {
				t.Errorf("lock file left after the run: %v", err)
			}
			lk, err := runlock.Acquire(dir, nil)
			if err != nil {
				t.Fatalf("directory still locked: %v", err)
			}
			lk.Release()
		})
	}
}

// TestLockPassedIn: a caller's lock on the run directory is used (and not
// released); a lock on another directory is refused.
func TestLockPassedIn(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	os.MkdirAll(dir, 0o755)
	lk, err := runlock.Acquire(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer lk.Release()
	o := baseOpts(dir)
	o.Train.Steps, o.Lock = 2, lk
	if _, err := Run(context.Background(), o); err != nil {
		t.Fatalf("run under the caller's lock: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, runlock.FileName)); err != nil {
		t.Errorf("Run released the caller's lock: %v", err)
	}
	other := t.TempDir()
	o = baseOpts(other)
	o.Lock = lk
	if _, err := Run(context.Background(), o); err == nil || !strings.Contains(err.Error(), other) {
		t.Errorf("lock of another directory: %v", err)
	}
}
