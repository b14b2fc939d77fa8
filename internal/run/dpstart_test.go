package run

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kestrel-lm/kestrel/internal/checkpoint"

	"github.com/kestrel-lm/kestrel/internal/comm"
	"github.com/kestrel-lm/kestrel/internal/config"
	"github.com/kestrel-lm/kestrel/internal/runlock"
)

// trainAllRanks runs Train on every rank of an in-process group (cfgs[r]
// is rank r's config) and returns each rank's error and how long the
// slowest rank took.
func trainAllRanks(t *testing.T, cfgs []config.Config, dir string, fresh bool) ([]error, time.Duration) {
	t.Helper()
	cs := comm.Local(len(cfgs))
	errs := make([]error, len(cs))
	start := time.Now()
	var wg sync.WaitGroup
	for r := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[r] = Train(context.Background(), cfgs[r], dir, Options{Comm: cs[r], Fresh: fresh, Logger: quietLog(), Stdout: io.Discard})
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("the ranks did not all return within 60 s (train.comm_timeout_s is 600)")
	}
	return errs, time.Since(start)
}

func dpConfigs(n int) []config.Config {
	cfgs := make([]config.Config, n)
	for r := range cfgs {
		cfgs[r] = tinyRun(4)
		cfgs[r].Train.CommTimeoutSeconds = 600
		cfgs[r].Monitor.SQLite, cfgs[r].Monitor.TensorBoard, cfgs[r].Monitor.TraceSteps = false, false, 0
	}
	return cfgs
}

// TestDPLockRefusalReachesEveryRank: a data-parallel start on a run
// directory whose lock another job holds ends every rank within seconds
// with the lock's error (rank 0 the *runlock.HeldError itself, the others
// rank 0's message), not after train.comm_timeout_s with a collective
// timeout; nothing is written in the directory.
func TestDPLockRefusalReachesEveryRank(t *testing.T) {
	t.Setenv("KESTREL_DATA", "/work/shared/data")
	dir := filepath.Join(t.TempDir(), "run")
	os.MkdirAll(dir, 0o755)
	held, err := runlock.Acquire(dir, quietLog())
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release()
	errs, took := trainAllRanks(t, dpConfigs(3), dir, false)
	if took > 30*time.Second {
		t.Errorf("the ranks took %v to give up", took)
	}
	var he *runlock.HeldError
	if !errors.As(errs[0], &he) {
		t.Errorf("rank 0: %v, want the lock's HeldError", errs[0])
	}
	for r, err := range errs[1:] {
		var se *comm.StartError
		if !errors.As(err, &se) || se.Rank != 0 || !strings.Contains(err.Error(), "is in use") || !strings.Contains(err.Error(), held.Path()) {
			t.Errorf("rank %d: %v, want rank 0's lock refusal", r+1, err)
		}
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if e.Name() != runlock.FileName {
			t.Errorf("the refused run wrote %s", e.Name())
		}
	}
}

// TestDPStartRefusals: other start-up refusals reach every rank too — a
// worker whose data is missing (every rank, rank 0 included, returns its
// message and rank 0 gives the lock back), and --fresh on an existing run
// directory.
func TestDPStartRefusals(t *testing.T) {
	t.Setenv("KESTREL_DATA", "/work/shared/data")
	dir := filepath.Join(t.TempDir(), "run")
	cfgs := dpConfigs(2)
	cfgs[1].Data.Train = "/nonexistent/input.txt"
	errs, _ := trainAllRanks(t, cfgs, dir, false)
	for r, err := range errs {
		if err == nil || !strings.Contains(err.Error(), "/nonexistent/input.txt") {
			t.Errorf("rank %d: %v, want rank 1's missing data", r, err)
		}
	}
	var se *comm.StartError
	if !errors.As(errs[0], &se) || se.Rank != 1 {
		t.Errorf("rank 0: %v, want a StartError from rank 1", errs[0])
	}
	if _, err := os.Stat(filepath.Join(dir, runlock.FileName)); err == nil {
		t.Error("rank 0 kept the lock after the refusal")
	}

	os.MkdirAll(dir, 0o755)
	errs, _ = trainAllRanks(t, dpConfigs(2), dir, true)
	for r, err := range errs {
		if err == nil || !strings.Contains(err.Error(), "--fresh") {
			t.Errorf("--fresh, rank %d: %v", r, err)
		}
	}

	// And a start that every rank agrees to trains.
	dir2 := filepath.Join(t.TempDir(), "run2")
	errs, _ = trainAllRanks(t, dpConfigs(2), dir2, false)
	for r, err := range errs {
		if err != nil {
			t.Errorf("rank %d: %v", r, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir2, "checkpoints", checkpoint.Name(4))); err != nil {
		t.Errorf("the agreed run wrote no final checkpoint: %v", err)
	}
}

// TestLeadStartOpensOnce: rank 0's start-up opening (options built, data
// opened, directory locked) is the one its first attempt trains with, not
// a second build; a start refused after it closes its data with the lock.
func TestLeadStartOpensOnce(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	st := attemptState{}
	if err := st.leadStart(dpConfigs(1)[0], dir, Options{Logger: quietLog()}); err != nil {
		t.Fatal(err)
	}
	if st.pending == nil || st.pending.to.Data == nil || st.lk == nil {
		t.Fatalf("leadStart kept no opening (%+v) or no lock", st.pending)
	}
	data := st.pending.to.Data
	op, err := st.open(dpConfigs(1)[0], dir, Options{Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	if op.to.Data != data || st.pending != nil {
		t.Errorf("the attempt built its options again (data %p, leadStart's %p; pending %v)", op.to.Data, data, st.pending)
	}
	st.pending = &op // as if the start were refused now: close releases both
	st.close()
	if _, err := os.Stat(filepath.Join(dir, runlock.FileName)); !os.IsNotExist(err) {
		t.Errorf("the lock is still there after close: %v", err)
	}
}
