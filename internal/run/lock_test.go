package run

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/runlock"
)

// TestTrainRefusesLockedDir: kestrel train on a run directory another
// trainer holds is refused before the monitor writes anything there, naming
// the holder; once the holder is gone the same command trains and leaves no
// lock behind.
func TestTrainRefusesLockedDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	os.MkdirAll(dir, 0o755)
	lk, err := runlock.Acquire(dir, nil) // the other trainer
	if err != nil {
		t.Fatal(err)
	}
	cfg := tinyRun(3)
	_, err = Train(context.Background(), cfg, dir, Options{Logger: quietLog()})
	var held *runlock.HeldError
	host, _ := os.Hostname()
	if !errors.As(err, &held) || !strings.Contains(err.Error(), "pid "+strconv.Itoa(os.Getpid())) || !strings.Contains(err.Error(), "host "+host) {
		t.Fatalf("got %v, want a refusal naming pid and host", err)
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if e.Name() != runlock.FileName {
			t.Errorf("the refused run wrote %s", e.Name())
		}
	}
	lk.Release()
	if _, err := Train(context.Background(), cfg, dir, Options{Logger: quietLog()}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, runlock.FileName)); !os.IsNotExist(err) {
		t.Errorf("lock left after the run: %v", err)
	}
}
