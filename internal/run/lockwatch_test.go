package run

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kestrel-lm/kestrel/internal/runlock"
)

// TestTrainNoticesLostLock: a lock file removed while kestrel train runs
// lets a second trainer take the directory; the first notices at its next
// step and stops with the runlock.LostError, long before its last step.
func TestTrainNoticesLostLock(t *testing.T) {
	t.Setenv("KESTREL_DATA", "/work/shared/data")
	cfg := tinyRun(100000)
	cfg.Checkpoint.Every = 0
	cfg.Train.EvalEvery = 0
	cfg.Monitor.SQLite, cfg.Monitor.TensorBoard, cfg.Monitor.TraceSteps = false, false, 0
	dir := filepath.Join(t.TempDir(), "run")
	type result struct {
		step int
		err  error
	}
	done := make(chan result, 1)
	go func() {
		res, err := Train(context.Background(), cfg, dir, Options{Logger: quietLog(), Stdout: io.Discard})
		r := result{err: err}
		if res != nil {
			r.step = res.Step
		}
		done <- r
	}()
	metrics := filepath.Join(dir, "metrics.jsonl")
	deadline := time.Now().Add(60 * time.Second)
	for {
		if fi, err := os.Stat(metrics); err == nil && fi.Size() > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no step was written within 60 s")
		}
		time.Sleep(time.Millisecond)
	}
	if err := os.Remove(filepath.Join(dir, runlock.FileName)); err != nil {
		t.Fatal(err)
	}
	second, err := runlock.Acquire(dir, quietLog()) // the second trainer gets in
	if err != nil {
		t.Fatalf("second trainer: %v", err)
	}
	defer second.Release()
	select {
	case r := <-done:
		var lost *runlock.LostError
		if !errors.As(r.err, &lost) {
			t.Fatalf("train ended with %v at step %d; want the lock's loss", r.err, r.step)
		}
		if r.step >= cfg.Train.Steps {
			t.Errorf("the run trained to its end (step %d) without noticing", r.step)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("train did not stop within 60 s of losing its lock")
	}
	if err := second.Check(); err != nil {
		t.Errorf("the first trainer disturbed the second's lock on its way out: %v", err)
	}
}
