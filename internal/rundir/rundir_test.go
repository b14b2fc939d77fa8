package rundir

import (
	"path/filepath"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/runlock"
)

// TestLayout: every method joins the run directory with the name §5 of
// docs/architecture.md gives the file.
func TestLayout(t *testing.T) {
	l := Of(filepath.Join("runs", "a"))
	for _, c := range []struct{ got, want string }{
		{l.Config(), "config.toml"},
		{l.Manifest(), "manifest.json"},
		{l.Branch(), "branch.json"},
		{l.Probe(), "probe.json"},
		{l.Metrics(), "metrics.jsonl"},
		{l.MetricsArchive("iv-3"), "metrics.archive-iv-3.jsonl"},
		{l.Alerts(), "alerts.jsonl"},
		{l.Samples(), "samples.jsonl"},
		{l.SamplesArchive("iv-3"), "samples.archive-iv-3.jsonl"},
		{l.Interventions(), "interventions.jsonl"},
		{l.DataReport(), "data_report.json"},
		{l.Store(), "metrics.sqlite"},
		{l.Trace(), "trace.json"},
		{l.TFEvents(), "events.out.tfevents.*"},
		{l.Checkpoints(), "checkpoints"},
		{l.Checkpoint(40), filepath.Join("checkpoints", "step-00000040")},
		{l.CheckpointsArchive("iv-3"), filepath.Join("checkpoints-archive", "iv-3")},
		{l.Report(), "report"},
		{l.Incidents(), "incidents"},
		{l.IncidentsClosed(), "incidents-closed.jsonl"},
		{l.Lock(), "lock"},
		{l.RewindPending(), "rewind.pending.json"},
	} {
		if want := filepath.Join("runs", "a", c.want); c.got != want {
			t.Errorf("got %s, want %s", c.got, want)
		}
	}
}

// TestLockIsRunlocks: the lock file the layout names is the one runlock
// takes (runlock sits on the same floor and keeps its own constant).
func TestLockIsRunlocks(t *testing.T) {
	if LockName != runlock.FileName {
		t.Errorf("LockName %q, runlock.FileName %q", LockName, runlock.FileName)
	}
}
