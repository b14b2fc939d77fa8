package run

import (
	"errors"
	"fmt"
	"os"

	"github.com/kestrel-lm/kestrel/internal/fileguard"
	"github.com/kestrel-lm/kestrel/internal/rundir"
	"github.com/kestrel-lm/kestrel/internal/runlog"
)

// runFiles are the files that mark a directory as a kestrel run (written
// by the trainer, the monitor or the run's lock before anything else), so
// a run stopped at any point of its first start is still resumed.
var runFiles = []string{rundir.ConfigName, rundir.MetricsName, rundir.AlertsName, rundir.StoreName, runlog.InterventionsFile, DataReportFile, rundir.LockName}

// CheckRunDir applies the output rule (internal/fileguard) to a run
// directory before anything is created in it: a missing or empty
// directory is a fresh run, a kestrel run directory is resumed, and
// anything else is refused naming it — a directory holding none of a
// run's files (config.toml, a run's manifest.json, metrics.jsonl,
// alerts.jsonl, checkpoints/ …), a regular file, a symbolic link. With
// fresh, any existing path is refused (train --fresh).
func CheckRunDir(dir string, fresh bool) error {
	if fresh {
		if _, err := os.Lstat(dir); err == nil {
			return fmt.Errorf("--fresh: run directory %s already exists; choose another --out or remove it", dir)
		}
	}
	if err := checkRunDir(dir); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	return nil
}

func checkRunDir(dir string) error {
	g := fileguard.Dir{Path: dir, What: "run directory", Markers: runFiles}
	err := g.Check()
	var re *fileguard.RefusedError
	if !errors.As(err, &re) {
		return err // nil, or the directory could not be read
	}
	if st, lerr := os.Lstat(dir); lerr != nil || !st.IsDir() {
		return err // a file or a link: fileguard's refusal says which
	}
	if isRunDir(dir) {
		return nil
	}
	return &fileguard.RefusedError{Path: dir, Reason: "exists and is not a kestrel run directory (none of config.toml, a run's manifest.json, metrics.jsonl, alerts.jsonl or checkpoints/ in it)"}
}

// isRunDir reports whether dir holds a run's checkpoints/ directory or a
// run's manifest.json (one with a config hash: a dataset's manifest.json
// is no run's).
func isRunDir(dir string) bool {
	if st, err := os.Lstat(rundir.Of(dir).Checkpoints()); err == nil && st.IsDir() {
		return true
	}
	m, err := runlog.ReadManifest(dir)
	return err == nil && m.ConfigHash != ""
}
