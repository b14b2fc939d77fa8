package run

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/kestrel-lm/kestrel/internal/checkpoint"
	"github.com/kestrel-lm/kestrel/internal/rundir"

	"github.com/kestrel-lm/kestrel/internal/config"
	"github.com/kestrel-lm/kestrel/internal/runlog"
	"github.com/kestrel-lm/kestrel/monitor"
)

// modelAlert reports whether a is a SEV0/SEV1 alert about the weights (not
// the machine, the data pipe or the records).
func modelAlert(a runlog.Alert) bool {
	return (a.Severity == runlog.SEV0 || a.Severity == runlog.SEV1) && !infraRules[a.Rule]
}

// ModelIncidents implements train.IncidentReporter: the model alerts of
// this trajectory (earlier invocations' included, abandoned trajectories'
// not) at steps in (from, to], one Incident per rule. A loss_spike whose
// verdict came back SEV2 does not count.
func (t *Observer) ModelIncidents(from, to int) []checkpoint.Incident {
	if t.m == nil {
		return nil
	}
	all := t.health.alerts(t.m.Alerts())
	closed := spikesClosedByVerdict(all)
	var in []runlog.Alert
	for _, a := range all {
		if modelAlert(a) && a.Step > int64(from) && a.Step <= int64(to) && !(a.Rule == monitor.RuleLossSpike && closed[a.Step]) {
			in = append(in, a)
		}
	}
	sort.SliceStable(in, func(i, j int) bool { return in[i].Step < in[j].Step })
	return perRule(in)
}

func spikesClosedByVerdict(alerts []runlog.Alert) map[int64]bool {
	closed := map[int64]bool{}
	for _, a := range alerts {
		if a.Rule == monitor.RuleSpikeVerdict && a.Severity == runlog.SEV2 {
			closed[a.Step] = true
		}
	}
	return closed
}

// UnclosedSince implements train.IncidentCloser: the first step of the
// earliest model alert of this trajectory at or before step that no
// person closed (incidents-closed.jsonl); a rescue closes an incident by
// abandoning its trajectory. A recovered loss spike counts too: the
// checkpoint from before it is kept until someone closes it.
func (t *Observer) UnclosedSince(step int) int {
	if t.m == nil {
		return 0
	}
	closures, err := runlog.ReadIncidentClosures(t.runDir)
	if err != nil {
		t.log.Warn("checkpoint keep policy: incident closures unreadable; every incident counts as open", "err", err)
	}
	first := 0
	for _, a := range t.health.alerts(t.m.Alerts()) {
		if !modelAlert(a) || a.Step > int64(step) || coveredBy(closures, a.Step) {
			continue
		}
		if first == 0 || int(a.Step) < first {
			first = int(a.Step)
		}
	}
	return first
}

func coveredBy(cs []runlog.IncidentClosure, step int64) bool {
	for i := range cs {
		if cs[i].Covers(step) {
			return true
		}
	}
	return false
}

// Incident is one model incident of a run as `kestrel incidents` lists
// it: the model alerts of one episode (each within the clean window of the
// one before), and how it ended.
type Incident struct {
	ID       string         `json:"id"` // inc-<first step>
	FromStep int            `json:"from_step"`
	ToStep   int            `json:"to_step"`
	Rules    []string       `json:"rules"`
	Worst    string         `json:"severity"`
	State    string         `json:"state"` // open | closed by rescue <id> | closed: <reason>
	Alerts   []runlog.Alert `json:"-"`
}

// Incidents lists the model incidents of the run in dir from its
// alerts.jsonl, oldest first: an incident is closed by a rescue when an
// intervention rewound past it, or by a person (CloseIncident); otherwise
// it is open. Steps with no model alert for the run's monitor.window (or
// monitor.cooldown + 1 when longer) separate two incidents, as for
// checkpoint health.
//
// Bad lines of alerts.jsonl are skipped: the incidents of the good alerts
// are returned with the *runlog.SkippedLinesError that counts them
// (runlog.SkippedLines), for the caller to report.
func Incidents(dir string) ([]Incident, error) {
	clean := incidentGap(dir)
	alerts, err := runlog.ReadAlerts(rundir.Of(dir).Alerts())
	var skipped error
	switch {
	case runlog.SkippedLines(err) > 0:
		skipped = err
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return nil, err
	}
	ivs, err := runlog.ReadInterventions(dir)
	if err != nil {
		return nil, err
	}
	closures, err := runlog.ReadIncidentClosures(dir)
	if err != nil {
		return nil, err
	}
	var model []runlog.Alert
	for _, a := range alerts {
		if modelAlert(a) {
			model = append(model, a)
		}
	}
	sort.SliceStable(model, func(i, j int) bool { return model[i].Step < model[j].Step })
	var out []Incident
	for _, a := range model {
		if n := len(out); n > 0 && a.Step-int64(out[n-1].ToStep) < int64(clean) {
			in := &out[n-1]
			in.ToStep = max(in.ToStep, int(a.Step))
			in.Alerts = append(in.Alerts, a)
			continue
		}
		out = append(out, Incident{ID: fmt.Sprintf("inc-%d", a.Step), FromStep: int(a.Step), ToStep: int(a.Step), Alerts: []runlog.Alert{a}})
	}
	for i := range out {
		out[i].describe(ivs, closures)
	}
	return out, skipped
}

// incidentGap is the run's clean window (healthTrack.clean), from its
// config.toml, or the defaults' when it has none.
func incidentGap(dir string) int {
	cfg, err := config.Load(rundir.Of(dir).Config(), nil)
	if err != nil {
		cfg = config.Default()
	}
	return newHealthTrack(cfg.Monitor).clean
}

func (in *Incident) describe(ivs []runlog.Intervention, closures []runlog.IncidentClosure) {
	rules := map[string]bool{}
	in.Worst = string(runlog.SEV1)
	for _, a := range in.Alerts {
		if !rules[a.Rule] {
			rules[a.Rule] = true
			in.Rules = append(in.Rules, a.Rule)
		}
		if a.Severity == runlog.SEV0 {
			in.Worst = string(runlog.SEV0)
		}
	}
	in.State = "open"
	for i := range closures {
		if closures[i].Covers(int64(in.FromStep)) {
			in.State = "closed: " + closures[i].Reason
			return
		}
	}
	for _, iv := range ivs {
		if iv.ToStep < in.FromStep && iv.FromStep >= in.FromStep {
			in.State = "closed by rescue " + iv.ID
			return
		}
	}
}

// CloseIncident records that a person closed incident id of the run in dir
// (`kestrel incidents close`), for reason; the keep policy then no longer
// holds the checkpoint from before it. The incident must exist and be open.
func CloseIncident(dir, id, reason string) (*runlog.IncidentClosure, error) {
	if strings.TrimSpace(reason) == "" {
		return nil, errors.New("incidents close: --reason is required (it is recorded with the closure)")
	}
	list, err := Incidents(dir)
	if err != nil && runlog.SkippedLines(err) == 0 { // bad alert lines: close among the good ones
		return nil, err
	}
	for _, in := range list {
		if in.ID != id {
			continue
		}
		if in.State != "open" {
			return nil, fmt.Errorf("incidents close: %s is already %s", id, in.State)
		}
		c := &runlog.IncidentClosure{ID: id, FromStep: in.FromStep, ToStep: in.ToStep, Time: time.Now().UTC().Format(time.RFC3339), Reason: reason, By: "person"}
		if err := runlog.AppendIncidentClosure(dir, c); err != nil {
			return nil, err
		}
		return c, nil
	}
	ids := make([]string, 0, len(list))
	for _, in := range list {
		ids = append(ids, in.ID)
	}
	return nil, fmt.Errorf("incidents close: no incident %q in %s (incidents: %s)", id, dir, strings.Join(ids, ", "))
}

// seedMonitor replays the run's history before step (metrics.jsonl, as
// truncated to the checkpoint training restarted from) into the monitor's
// windows and the loss band of checkpoint health: the rules judge the
// first steps after a resume or rollback against the run's own past.
func (t *Observer) seedMonitor(step int) {
	path := rundir.Of(t.runDir).Metrics()
	hist, err := readHistory(path, step, 4*t.health.window+512)
	if err != nil {
		t.log.Warn("monitor: the run's history could not be read; the windows start empty", "file", path, "err", err)
		return
	}
	if len(hist) == 0 {
		return
	}
	t.m.Seed(hist)
	for _, s := range hist {
		if x, ok := s.Values["train_loss_raw"]; ok {
			t.health.losses = append(t.health.losses, stepLoss{int(s.Step), x})
		}
		if x, ok := s.Values["train_loss_ema"]; ok {
			t.health.ema = x
		}
	}
	if n := len(t.health.losses); n > t.health.window && t.health.window > 0 {
		t.health.losses = t.health.losses[n-t.health.window:]
	}
}

// historyTail bounds what readHistory reads of a metrics.jsonl: its last
// 16 MiB (thousands of steps, beyond every window), so a resume of a long
// run does not parse the whole log at start-up.
const historyTail = 16 << 20

// readHistory reads the step and evaluation lines of the tail of a
// metrics.jsonl (historyTail) with a step before `before`, keeping the last
// keep step lines (evaluations all). A line that does not parse is
// skipped; a missing file is no history.
func readHistory(path string, before, keep int) ([]monitor.Sample, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	tail := false
	if st, err := f.Stat(); err == nil && st.Size() > historyTail {
		if _, err := f.Seek(st.Size()-historyTail, io.SeekStart); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		tail = true
	}
	rec := runlog.NewRecord()
	var out []monitor.Sample
	steps := 0
	_, err = runlog.EachLine(f, func(line []byte) { // metrics.jsonl's own reader: a line over its bound skipped, not the end
		if tail { // the first line read from the middle of the file is cut
			tail = false
			return
		}
		if runlog.ParseLine(bytes.TrimSpace(line), rec) != nil {
			return
		}
		if ev, ok := rec.Str("event"); ok && ev != "" {
			return // checkpoints and stops are not samples
		}
		st, ok := rec.Num("step")
		if !ok || int(st) >= before {
			return
		}
		s := monitor.Sample{Step: int64(st), Values: map[string]float64{}}
		rec.Each(func(name string, v float64) {
			switch name {
			case "step", "unix_time", "wall_time":
			case "tokens_seen":
				s.Tokens = int64(v)
			default:
				s.Values[name] = v
			}
		})
		if _, isStep := s.Values["train_loss_raw"]; isStep {
			steps++
		}
		out = append(out, s)
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	// keep the last `keep` step lines and every evaluation
	if steps > keep {
		drop := steps - keep
		kept := out[:0]
		for _, s := range out {
			if _, isStep := s.Values["train_loss_raw"]; isStep && drop > 0 {
				drop--
				continue
			}
			kept = append(kept, s)
		}
		out = kept
	}
	return out, nil
}
