package run

import (
	"fmt"
	"log/slog"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/kestrel-lm/kestrel/internal/checkpoint"
	"github.com/kestrel-lm/kestrel/internal/rundir"

	"github.com/kestrel-lm/kestrel/internal/runlog"
	"github.com/kestrel-lm/kestrel/internal/train"
	"github.com/kestrel-lm/kestrel/monitor"
)

// infraRules are the SEV0/SEV1 rules about the machine, the data pipe or
// the records, not about the weights: they never make a checkpoint
// unhealthy (a throughput drop on a shared machine says nothing about
// whether the model can be rolled back to).
var infraRules = map[string]bool{
	monitor.RuleStalled:          true,
	monitor.RuleTokensFlat:       true,
	monitor.RuleBlackout:         true,
	monitor.RuleThroughputDrop:   true,
	monitor.RuleContention:       true,
	monitor.RuleStall:            true,
	monitor.RuleManifest:         true,
	monitor.RuleCheckpointFailed: true,
	monitor.RuleCheckpointSlow:   true,
	monitor.RuleMemoryCreep:      true, // a leak: a rollback would not cure it
}

// healthTrack keeps what checkpoint health needs besides the monitor's
// alerts of this trajectory: the recent raw train losses, the last
// train_loss_ema, and the alerts of earlier invocations of the run.
type healthTrack struct {
	window int     // monitor.window: the loss band's window
	clean  int     // steps with no alert that close an episode: max(monitor.window, monitor.cooldown+1)
	zLimit float64 // monitor.spike_z: the band's upper edge in robust z
	losses []stepLoss
	ema    float64
	// prior are the alerts of this run's history that the monitor of this
	// trajectory did not fire: those of earlier invocations (alerts.jsonl
	// when the observer started) and, after a rewind within this process,
	// those fired before it; only alerts of steps before the step the
	// trajectory restarted from are kept. folded counts the monitor's
	// alerts already moved into prior.
	prior    []runlog.Alert
	folded   int
	lastStep int
}

type stepLoss struct {
	step int
	loss float64
}

func newHealthTrack(c monitor.Config) healthTrack {
	// A condition that persists fires again after the cooldown: the clean
	// window outlasts it, so an episode does not close between two firings.
	return healthTrack{window: c.Window, clean: max(c.Window, c.Cooldown+1), zLimit: c.SpikeZ, ema: math.NaN()}
}

// loadPrior reads the alerts earlier invocations wrote to runDir's
// alerts.jsonl, before this invocation's monitor appends to it, so that an
// incident open when the run stopped is still open after a resume. Bad
// lines are skipped with a warning that counts them (the good alerts
// still count); an unreadable file is a warning: health is then judged on
// this invocation's alerts alone.
func (h *healthTrack) loadPrior(runDir string, log *slog.Logger) {
	p := rundir.Of(runDir).Alerts()
	prior, err := runlog.ReadAlerts(p)
	if n := runlog.SkippedLines(err); n > 0 {
		log.Warn("checkpoint health: bad lines of the earlier alerts skipped; judged on the others", "file", p, "skipped_lines", n, "err", err)
	} else if err != nil {
		log.Warn("checkpoint health: earlier alerts unreadable; judged on this run's alerts only", "file", p, "err", err)
		return
	}
	h.prior = prior
}

// observe records one step's losses. alerts returns the monitor's alerts
// so far: when a step does not follow the one before (the first step of
// an invocation, or a rewind), the history is cut back to the steps before
// it, so alerts and losses of an abandoned trajectory do not count.
func (h *healthTrack) observe(sm *runlog.Step, alerts func() []runlog.Alert) {
	if h.lastStep == 0 || sm.Step <= h.lastStep {
		if h.lastStep != 0 {
			cur := alerts()
			h.prior = append(h.prior, cur[min(h.folded, len(cur)):]...)
			h.folded = len(cur)
		}
		h.prior = slices.DeleteFunc(h.prior, func(a runlog.Alert) bool { return a.Step >= int64(sm.Step) })
		h.losses = slices.DeleteFunc(h.losses, func(l stepLoss) bool { return l.step >= sm.Step })
	}
	h.lastStep = sm.Step
	if h.window <= 0 {
		return
	}
	h.losses = append(h.losses, stepLoss{sm.Step, sm.TrainLossRaw})
	if len(h.losses) > h.window {
		h.losses = h.losses[len(h.losses)-h.window:]
	}
	h.ema = sm.TrainLossEMA
}

// alerts is the run's history of alerts as this trajectory sees it.
func (h *healthTrack) alerts(cur []runlog.Alert) []runlog.Alert {
	return append(slices.Clip(h.prior), cur[min(h.folded, len(cur)):]...)
}

// band places the last train_loss_ema against the window's robust band;
// nil while fewer than 8 losses were seen.
func (h *healthTrack) band() *checkpoint.LossBand {
	var fin []float64
	for _, l := range h.losses {
		if x := l.loss; !math.IsNaN(x) && !math.IsInf(x, 0) {
			fin = append(fin, x)
		}
	}
	if len(h.losses) < 8 {
		return nil
	}
	b := &checkpoint.LossBand{EMA: checkpoint.Num(h.ema), Limit: checkpoint.Num(h.zLimit), Window: len(h.losses),
		Median: checkpoint.Num(math.NaN()), Spread: checkpoint.Num(math.NaN()), Z: checkpoint.Num(math.NaN())}
	if len(fin) < len(h.losses)/2 {
		return b // mostly non-finite: out of band
	}
	med := medianOf(fin)
	dev := make([]float64, len(fin))
	for i, x := range fin {
		dev[i] = math.Abs(x - med)
	}
	spread := 1.4826 * medianOf(dev)
	z := 0.0
	switch d := h.ema - med; {
	case math.IsNaN(h.ema) || math.IsInf(h.ema, 0):
		z = math.NaN()
	case spread > 0:
		z = d / spread
	case d > 0:
		z = math.Inf(1)
	case d < 0:
		z = math.Inf(-1)
	}
	b.Median, b.Spread, b.Z = checkpoint.Num(med), checkpoint.Num(spread), checkpoint.Num(z)
	b.Within = !math.IsNaN(z) && z <= h.zLimit
	return b
}

func medianOf(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// CheckpointHealth implements train.HealthReporter from the monitor's
// alerts and the recent losses. A checkpoint at step is healthy when no
// incident is open and train_loss_ema is within its band (robust z over
// the last monitor.window raw losses ≤ monitor.spike_z).
//
// Open incidents: the SEV0/SEV1 alerts about the model (every rule but
// infraRules) fired at or before step form episodes, each alert within
// a clean window of the one before it; the latest episode is open until a
// clean window passes after its last alert with none firing. The clean
// window is monitor.window steps, or monitor.cooldown + 1 when that is
// longer (a persisting condition fires again after the cooldown). Alerts of earlier invocations count (alerts.jsonl),
// but not those of steps at or after the step training restarted from (an
// abandoned trajectory). A loss_spike whose verdict came back SEV2
// (recoverable, logging artifact, undetermined) is closed by its verdict.
// With the monitor off it cannot judge: ok is false.
func (t *Observer) CheckpointHealth(step int) (checkpoint.Health, bool) {
	if t.m == nil {
		return checkpoint.Health{}, false
	}
	h := checkpoint.Health{Status: checkpoint.HealthHealthy, Loss: t.health.band()}
	h.Incidents = openIncidents(t.health.alerts(t.m.Alerts()), int64(step), int64(t.health.clean))
	var why []string
	if len(h.Incidents) > 0 {
		why = append(why, fmt.Sprintf("%d open incident(s) since step %d", len(h.Incidents), h.FirstIncident()))
	}
	if b := h.Loss; b != nil && !b.Within {
		why = append(why, fmt.Sprintf("train_loss_ema %.4g above its band (z = %.1f > %.3g)", float64(b.EMA), float64(b.Z), float64(b.Limit)))
	}
	if len(why) > 0 {
		h.Status, h.Reason = checkpoint.HealthUnhealthy, strings.Join(why, "; ")
	} else {
		h.Reason = "no open SEV0/SEV1 incident, loss within its band"
	}
	return h, true
}

// openIncidents is the open episode's alerts at step, one Incident per
// rule in order of first firing (see CheckpointHealth).
func openIncidents(alerts []runlog.Alert, step, clean int64) []checkpoint.Incident {
	closed := spikesClosedByVerdict(alerts)
	var model []runlog.Alert
	for _, a := range alerts {
		if modelAlert(a) && a.Step <= step && !(a.Rule == monitor.RuleLossSpike && closed[a.Step]) {
			model = append(model, a)
		}
	}
	sort.SliceStable(model, func(i, j int) bool { return model[i].Step < model[j].Step })
	if len(model) == 0 || step-model[len(model)-1].Step >= clean {
		return nil
	}
	start := len(model) - 1
	for start > 0 && model[start].Step-model[start-1].Step < clean {
		start--
	}
	return perRule(model[start:])
}

// perRule folds alerts (in step order) into one Incident per rule, in
// order of first firing: its first and last step, how many times it
// fired, and SEV0 if any of them was.
func perRule(alerts []runlog.Alert) []checkpoint.Incident {
	var out []checkpoint.Incident
	idx := map[string]int{}
	for _, a := range alerts {
		if i, ok := idx[a.Rule]; ok {
			out[i].LastStep = int(a.Step)
			out[i].Count++
			if a.Severity == runlog.SEV0 {
				out[i].Severity = string(runlog.SEV0)
			}
			continue
		}
		idx[a.Rule] = len(out)
		out = append(out, checkpoint.Incident{Rule: a.Rule, Severity: string(a.Severity), Step: int(a.Step), LastStep: int(a.Step), Count: 1})
	}
	return out
}

var _ train.HealthReporter = (*Observer)(nil)
