package dashboard

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/kestrel-lm/kestrel/internal/rundir"
	"github.com/kestrel-lm/kestrel/internal/runlog"
)

// Event is something worth marking on the charts: an alert, a classified
// spike, a skipped or clipped step, a schedule phase change, a batch-size
// change, a data-stage switch, a checkpoint, or a warm-start.
type Event struct {
	Step     float64 `json:"step"`
	Tokens   float64 `json:"tokens"`
	Time     float64 `json:"time"`
	Kind     string  `json:"kind"`               // alert, spike, skipped, clipped, lr_phase, batch_size, data_stage, checkpoint, warm_start, intervention
	Severity string  `json:"severity,omitempty"` // SEV0, SEV1, SEV2 for alerts
	Title    string  `json:"title"`
	Detail   string  `json:"detail,omitempty"`
	Runbook  string  `json:"runbook,omitempty"`
	Evidence string  `json:"evidence,omitempty"` // incident directory, relative to the run
}

// runData is a run's metrics log plus the events derived from it and its
// alerts.
type runData struct {
	mu sync.RWMutex

	*runlog.Log
	events  []Event
	lastStr map[string]string  // last value of string fields, for change events
	lastNum map[string]float64 // last value of watched numeric fields
	lastMix rowMix             // the last step line's mixture target (datastage.go)

	alertsOffset  int64 // bytes of alerts.jsonl, or the last alerts rowid of a store
	alerts        []Event
	badAlerts     int    // bad lines of alerts.jsonl skipped so far
	firstBadAlert string // where the first one is and why
	modTime       time.Time
}

// metricsPath is the run's metrics.jsonl, or its metrics.sqlite when only
// the store exists (as `kestrel watch --store` leaves for other trainers).
func metricsPath(dir string) string {
	jsonl, store := rundir.Of(dir).Metrics(), rundir.Of(dir).Store()
	if _, err := os.Stat(jsonl); err != nil {
		if _, err := os.Stat(store); err == nil {
			return store
		}
	}
	return jsonl
}

func newRunData(dir string) *runData {
	d := &runData{Log: runlog.New(metricsPath(dir)), lastStr: map[string]string{}, lastNum: map[string]float64{}}
	d.OnRecord = d.deriveEvents
	d.OnReset = func() {
		d.events = nil
		clear(d.lastStr)
		clear(d.lastNum)
		d.lastMix = rowMix{}
	}
	return d
}

// Run is one run directory the dashboard serves.
type Run struct {
	Name string
	Dir  string
	data *runData
	root runRoot // every file of Dir the server reads goes through it
}

// refresh reads whatever was appended to metrics.jsonl and alerts.jsonl since
// the last call.
func (r *Run) refresh() error {
	d := r.data
	d.mu.Lock()
	defer d.mu.Unlock()
	// runlog opens these by path: refuse any that leads out of the run.
	base := filepath.Base(d.Path)
	names := []string{base}
	if runlog.IsSQLite(d.Path) {
		names = append(names, base+"-wal", base+"-shm", base+"-journal")
	} else {
		names = append(names, rundir.AlertsName)
	}
	for _, n := range names {
		if err := r.root.check(n); err != nil {
			return fmt.Errorf("run %s: %w", r.Name, err)
		}
	}
	if err := d.Refresh(); err != nil {
		return fmt.Errorf("run %s: %w", r.Name, err)
	}
	for _, n := range []string{base, base + "-wal"} {
		if st, err := r.root.stat(n); err == nil && st.ModTime().After(d.modTime) {
			d.modTime = st.ModTime()
		}
	}
	if runlog.IsSQLite(d.Path) {
		as, last, err := runlog.StoreAlerts(d.Path, d.alertsOffset)
		if err != nil {
			return fmt.Errorf("run %s: %w", r.Name, err)
		}
		for i := range as {
			d.alerts = append(d.alerts, alertEvent(&as[i]))
		}
		d.alertsOffset = last
		return nil
	}
	return d.readAlerts(rundir.Of(r.Dir).Alerts())
}

func (d *runData) deriveEvents(rec *runlog.Record, step, tokens, wall float64) {
	ev := func(kind, title, detail string) {
		d.events = append(d.events, Event{Step: step, Tokens: tokens, Time: wall, Kind: kind, Title: title, Detail: detail})
	}
	val := func(n string) float64 { v, _ := rec.Num(n); return v }
	if val("skipped") == 1 {
		ev("skipped", "skipped step", fmt.Sprintf("loss %.4g, grad norm %.4g", val("train_loss_raw"), val("grad_global_norm")))
	}
	if val("clipped") == 1 {
		ev("clipped", "update clipped", fmt.Sprintf("update norm %.4g", val("update_norm")))
	}
	d.lrPhaseEvent(rec, ev)
	d.dataStageEvent(rec, step, ev)
	for _, f := range []struct{ field, kind, title string }{
		{"data_stage", "data_stage", "data stage"},
		{"stage", "data_stage", "data stage"},
	} {
		if s, ok := rec.Str(f.field); ok {
			if old, seen := d.lastStr[f.field]; seen && old != s {
				ev(f.kind, fmt.Sprintf("%s: %s → %s", f.title, old, s), "")
			}
			d.lastStr[f.field] = s
		}
	}
	for _, f := range []string{"batch_size", "global_batch", "tokens_per_update"} {
		if v, ok := rec.Num(f); ok {
			if old, seen := d.lastNum[f]; seen && old != v {
				ev("batch_size", fmt.Sprintf("%s: %g → %g", f, old, v), "")
			}
			d.lastNum[f] = v
			break
		}
	}
	if kind, ok := rec.Str("event"); ok {
		title := kind
		if m, ok := rec.Str("message"); ok {
			title = kind + ": " + m
		}
		k := kind
		switch {
		case strings.HasPrefix(kind, "checkpoint"):
			k = "checkpoint"
		case strings.Contains(kind, "warm"):
			k = "warm_start"
		}
		detail, _ := rec.Str("detail")
		ev(k, title, detail)
	}
}

// lrPhaseEvent marks a change of the LR phase: of lr_phase (warmup →
// stable, decay → rewarm …) or of the [[optim.phases]] entry in force
// (lr_phase_entry, absent = 0: optim.schedule), so that a phase that keeps
// the name of the one before (a WSD-S whose spacing changes, a decay after
// a decay) is marked too. One marker per step.
func (d *runData) lrPhaseEvent(rec *runlog.Record, ev func(kind, title, detail string)) {
	s, ok := rec.Str("lr_phase")
	if !ok {
		return
	}
	entry, ok := rec.Num("lr_phase_entry")
	if !ok || math.IsNaN(entry) { // absent: optim.schedule
		entry = 0
	}
	old, seen := d.lastStr["lr_phase"]
	oldEntry := d.lastNum["lr_phase_entry"]
	d.lastStr["lr_phase"], d.lastNum["lr_phase_entry"] = s, entry
	switch {
	case !seen:
	case entry != oldEntry && entry > 0:
		ev("lr_phase", fmt.Sprintf("LR phase: %s → %s", old, s), fmt.Sprintf("optim.phases[%d] takes over", int(entry)-1))
	case entry != oldEntry || old != s:
		ev("lr_phase", fmt.Sprintf("LR phase: %s → %s", old, s), "")
	}
}

// readAlerts loads the lines appended to alerts.jsonl (written by the
// monitor) since the last call; a file that was replaced is read again.
// Bad lines are skipped and counted (badAlerts, shown among the run's
// problems), not a refresh error.
func (d *runData) readAlerts(path string) error {
	as, next, err := runlog.ReadAlertsFrom(path, d.alertsOffset)
	if next < d.alertsOffset {
		d.alerts, d.badAlerts, d.firstBadAlert = nil, 0, ""
	}
	d.alertsOffset = next
	for i := range as {
		d.alerts = append(d.alerts, alertEvent(&as[i]))
	}
	if n := runlog.SkippedLines(err); n > 0 {
		if d.badAlerts == 0 {
			d.firstBadAlert = err.Error()
		}
		d.badAlerts += n
		return nil
	}
	return err
}

// alertProblem says how many bad lines of alerts.jsonl were skipped, ""
// when none.
func (d *runData) alertProblem() string {
	if d.badAlerts == 0 {
		return ""
	}
	return fmt.Sprintf("alerts.jsonl: %d unreadable lines skipped (the alerts shown are the others); the first: %s", d.badAlerts, d.firstBadAlert)
}

// alertEvent places an alert on the charts; a classified spike is its own
// kind of marker.
func alertEvent(a *runlog.Alert) Event {
	e := Event{
		Step:     float64(a.Step),
		Tokens:   float64(a.Tokens),
		Time:     math.NaN(),
		Kind:     "alert",
		Severity: string(a.Severity),
		Title:    a.Rule,
		Detail:   a.Message,
		Runbook:  a.Runbook,
		Evidence: a.Evidence,
	}
	if a.Verdict != "" {
		e.Kind = "spike"
		e.Detail = strings.TrimSpace(a.Verdict + ". " + e.Detail)
	}
	return e
}
