package run

import (
	"path/filepath"

	"github.com/kestrel-lm/kestrel/internal/runlog"
)

// checkStarts hands the monitor the run's starts (man: manifest.json as the
// trainer rewrote it for this start, or the error reading it) for
// restart_storm.
func (t *Observer) checkStarts(step int64, man *runlog.Manifest, err error) {
	if err != nil {
		t.log.Warn("monitor: restart-storm check skipped: the manifest could not be read", "file", filepath.Join(t.runDir, runlog.ManifestFile), "err", err)
		return
	}
	t.m.Starts(step, man.Starts)
}
