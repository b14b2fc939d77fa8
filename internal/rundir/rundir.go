// Package rundir owns the names of a run directory's files: one Layout
// method per file (docs/architecture.md §5), so no other package spells a
// run file's name. It names paths only; reading and writing them is the
// business of the packages that own each format (runlog, checkpoint,
// monitor, runlock, rewind). A prepared dataset's directory (its
// manifest.json and report.json) is a different layout, owned by
// internal/data/shards and prepare.
package rundir

import (
	"fmt"
	"path/filepath"
)

// The base names of a run directory's files, for the code that lists them
// (a marker check, the files a server serves or a copy carries).
const (
	ConfigName          = "config.toml"
	ManifestName        = "manifest.json"
	BranchName          = "branch.json"
	ProbeName           = "probe.json"
	MetricsName         = "metrics.jsonl"
	AlertsName          = "alerts.jsonl"
	SamplesName         = "samples.jsonl"
	InterventionsName   = "interventions.jsonl"
	DataReportName      = "data_report.json"
	StoreName           = "metrics.sqlite"
	TraceName           = "trace.json"
	CheckpointsName     = "checkpoints"
	ArchiveName         = "checkpoints-archive"
	ReportName          = "report"
	IncidentsName       = "incidents"
	IncidentsClosedName = "incidents-closed.jsonl"
	LockName            = "lock"
	RewindPendingName   = "rewind.pending.json"
	TFEventsGlob        = "events.out.tfevents.*"
)

// Layout is a run directory: Dir joined with the name of each file.
type Layout struct{ Dir string }

// Of returns the layout of the run directory dir.
func Of(dir string) Layout { return Layout{Dir: dir} }

func (l Layout) path(name string) string { return filepath.Join(l.Dir, name) }

// Config is the resolved config.toml (every default written out).
func (l Layout) Config() string { return l.path(ConfigName) }

// Manifest is manifest.json, the reproducibility manifest.
func (l Layout) Manifest() string { return l.path(ManifestName) }

// Branch is branch.json, a branch's origin and change.
func (l Layout) Branch() string { return l.path(BranchName) }

// Probe is probe.json, the frozen probe batch.
func (l Layout) Probe() string { return l.path(ProbeName) }

// Metrics is metrics.jsonl, one line per step, evaluation and checkpoint.
func (l Layout) Metrics() string { return l.path(MetricsName) }

// MetricsArchive is metrics.archive-<id>.jsonl, the metrics lines the
// intervention id moved out.
func (l Layout) MetricsArchive(id string) string {
	return l.path("metrics.archive-" + id + ".jsonl")
}

// Alerts is alerts.jsonl, one line per alert.
func (l Layout) Alerts() string { return l.path(AlertsName) }

// Samples is samples.jsonl, the generations at each checkpoint.
func (l Layout) Samples() string { return l.path(SamplesName) }

// SamplesArchive is samples.archive-<id>.jsonl, the generations the
// intervention id abandoned.
func (l Layout) SamplesArchive(id string) string {
	return l.path("samples.archive-" + id + ".jsonl")
}

// Interventions is interventions.jsonl, one line per intervention.
func (l Layout) Interventions() string { return l.path(InterventionsName) }

// DataReport is data_report.json, a copy of the dataset's report.json.
func (l Layout) DataReport() string { return l.path(DataReportName) }

// Store is metrics.sqlite, the metric store.
func (l Layout) Store() string { return l.path(StoreName) }

// Trace is trace.json, the Chrome/Perfetto trace of step phases.
func (l Layout) Trace() string { return l.path(TraceName) }

// TFEvents is the glob of the TensorBoard event files.
func (l Layout) TFEvents() string { return l.path(TFEventsGlob) }

// Checkpoints is the checkpoints/ directory.
func (l Layout) Checkpoints() string { return l.path(CheckpointsName) }

// Checkpoint is the directory of the checkpoint of step (checkpoints/step-%08d).
func (l Layout) Checkpoint(step int) string {
	return filepath.Join(l.Checkpoints(), fmt.Sprintf("step-%08d", step))
}

// CheckpointsArchive is checkpoints-archive/<id>/, the checkpoints the
// intervention id moved aside.
func (l Layout) CheckpointsArchive(id string) string {
	return filepath.Join(l.path(ArchiveName), id)
}

// Report is the report/ directory (report.md and its plots).
func (l Layout) Report() string { return l.path(ReportName) }

// Incidents is the incidents/ directory (SEV0 bundles, RESCUE.md).
func (l Layout) Incidents() string { return l.path(IncidentsName) }

// IncidentsClosed is incidents-closed.jsonl, the incidents a person closed.
func (l Layout) IncidentsClosed() string { return l.path(IncidentsClosedName) }

// Lock is the lock file a running trainer holds (internal/runlock).
func (l Layout) Lock() string { return l.path(LockName) }

// RewindPending is rewind.pending.json, the intervention of a rewind in
// progress.
func (l Layout) RewindPending() string { return l.path(RewindPendingName) }
