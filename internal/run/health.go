package run

import (
	"fmt"
	"math"
	"sort"
	"strings"

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
}

// healthTrack keeps what checkpoint health needs besides the alerts: the
// recent raw train losses and the last train_loss_ema.
type healthTrack struct {
	window int     // monitor.window: the loss band's window and the clean window
	zLimit float64 // monitor.spike_z: the band's upper edge in robust z
	losses []float64
	ema    float64
}

func newHealthTrack(c monitor.Config) healthTrack {
	return healthTrack{window: c.Window, zLimit: c.SpikeZ, ema: math.NaN()}
}

// observe records one step's losses.
func (h *healthTrack) observe(sm *runlog.Step) {
	if h.window <= 0 {
		return
	}
	h.losses = append(h.losses, sm.TrainLossRaw)
	if len(h.losses) > h.window {
		h.losses = h.losses[len(h.losses)-h.window:]
	}
	h.ema = sm.TrainLossEMA
}

// band places the last train_loss_ema against the window's robust band;
// nil while fewer than 8 losses were seen.
func (h *healthTrack) band() *train.LossBand {
	var fin []float64
	for _, x := range h.losses {
		if !math.IsNaN(x) && !math.IsInf(x, 0) {
			fin = append(fin, x)
		}
	}
	if len(h.losses) < 8 {
		return nil
	}
	b := &train.LossBand{EMA: train.Num(h.ema), Limit: train.Num(h.zLimit), Window: len(h.losses),
		Median: train.Num(math.NaN()), Spread: train.Num(math.NaN()), Z: train.Num(math.NaN())}
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
	b.Median, b.Spread, b.Z = train.Num(med), train.Num(spread), train.Num(z)
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
// monitor.window steps of the one before it; the latest episode is open
// until monitor.window steps pass after its last alert with none firing
// (a clean window). A loss_spike whose verdict came back SEV2
// (recoverable, logging artifact, undetermined) is closed by its verdict.
// With the monitor off it cannot judge: ok is false.
func (t *Observer) CheckpointHealth(step int) (train.Health, bool) {
	if t.m == nil {
		return train.Health{}, false
	}
	h := train.Health{Status: train.HealthHealthy, Loss: t.health.band()}
	h.Incidents = openIncidents(t.m.Alerts(), int64(step), int64(t.health.window))
	var why []string
	if len(h.Incidents) > 0 {
		why = append(why, fmt.Sprintf("%d open incident(s) since step %d", len(h.Incidents), h.FirstIncident()))
	}
	if b := h.Loss; b != nil && !b.Within {
		why = append(why, fmt.Sprintf("train_loss_ema %.4g above its band (z = %.1f > %.3g)", float64(b.EMA), float64(b.Z), float64(b.Limit)))
	}
	if len(why) > 0 {
		h.Status, h.Reason = train.HealthUnhealthy, strings.Join(why, "; ")
	} else {
		h.Reason = "no open SEV0/SEV1 incident, loss within its band"
	}
	return h, true
}

// openIncidents is the open episode's alerts at step, one Incident per
// rule in order of first firing (see CheckpointHealth).
func openIncidents(alerts []runlog.Alert, step, clean int64) []train.Incident {
	closed := map[int64]bool{} // spike steps with a SEV2 verdict
	for _, a := range alerts {
		if a.Rule == monitor.RuleSpikeVerdict && a.Severity == runlog.SEV2 {
			closed[a.Step] = true
		}
	}
	var model []runlog.Alert
	for _, a := range alerts {
		if (a.Severity != runlog.SEV0 && a.Severity != runlog.SEV1) || infraRules[a.Rule] || a.Step > step {
			continue
		}
		if a.Rule == monitor.RuleLossSpike && closed[a.Step] {
			continue
		}
		model = append(model, a)
	}
	sort.SliceStable(model, func(i, j int) bool { return model[i].Step < model[j].Step })
	if len(model) == 0 || step-model[len(model)-1].Step >= clean {
		return nil
	}
	start := len(model) - 1
	for start > 0 && model[start].Step-model[start-1].Step < clean {
		start--
	}
	var out []train.Incident
	idx := map[string]int{}
	for _, a := range model[start:] {
		if i, ok := idx[a.Rule]; ok {
			out[i].LastStep = int(a.Step)
			out[i].Count++
			if a.Severity == runlog.SEV0 {
				out[i].Severity = string(runlog.SEV0)
			}
			continue
		}
		idx[a.Rule] = len(out)
		out = append(out, train.Incident{Rule: a.Rule, Severity: string(a.Severity), Step: int(a.Step), LastStep: int(a.Step), Count: 1})
	}
	return out
}

var _ train.HealthReporter = (*Observer)(nil)
