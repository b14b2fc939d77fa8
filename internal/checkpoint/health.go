package checkpoint

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	"github.com/kestrel-lm/kestrel/internal/runlog"
)

// Checkpoint health statuses (Health.Status).
const (
	// HealthHealthy: a reporter judged the checkpoint and found no open
	// SEV0/SEV1 incident and the train loss within its band.
	HealthHealthy = "healthy"
	// HealthUnhealthy: an incident was open, or the loss out of its band.
	HealthUnhealthy = "unhealthy"
	// HealthUnknown: no reporter judged it (monitor off, or a checkpoint
	// written before health was recorded).
	HealthUnknown = "unknown"
)

// Health is a checkpoint's health when it was written, in state.json's
// "health": what a rollback needs to pick a checkpoint it can trust. The
// status and incidents come from a HealthReporter (the monitor, through
// internal/run); the trainer adds the latest evaluation's losses.
type Health struct {
	Status string `json:"status"` // healthy | unhealthy | unknown
	// Incidents are the SEV0/SEV1 alerts open at the checkpoint's step,
	// one entry per rule (the reporter documents what "open" means).
	Incidents []Incident `json:"open_incidents,omitempty"`
	// Loss is train_loss_ema against the band of the recent raw losses;
	// absent when the reporter had too few steps to draw a band.
	Loss *LossBand `json:"loss_band,omitempty"`
	// ValLoss and ProbeLoss are the latest evaluation's val_loss and
	// fixed_probe_loss in this invocation (the probe only when it ran),
	// at ValStep; absent before the first evaluation.
	ValLoss   *Num `json:"val_loss,omitempty"`
	ProbeLoss *Num `json:"fixed_probe_loss,omitempty"`
	ValStep   int  `json:"eval_step,omitempty"`
	// Probe is fixed_probe_loss measured on this checkpoint's own weights
	// when it was written (absent without a probe batch): confirmation
	// compares it with the checkpoint before (confirm.go).
	Probe *Num `json:"checkpoint_probe_loss,omitempty"`
	// UnclosedSince is the first step of the earliest model incident of
	// the run's trajectory that no rescue and no person closed (0: none).
	// The keep policy keeps the newest confirmed checkpoint from before it.
	UnclosedSince int `json:"unclosed_incident_since,omitempty"`
	// Reason says in one line why the status is what it is.
	Reason string `json:"reason,omitempty"`
}

// Incident is one open SEV0/SEV1 alert rule: its first and last firing
// step within the open episode and how many times it fired.
type Incident struct {
	Rule     string `json:"rule"`
	Severity string `json:"severity"`
	Step     int    `json:"step"`
	LastStep int    `json:"last_step"`
	Count    int    `json:"count"`
}

// LossBand places train_loss_ema at the checkpoint against the robust band
// of the last Window raw train losses: Z = (EMA − Median) / Spread, where
// Spread = 1.4826·MAD; the loss is within its band when Z ≤ Limit (a loss
// below its band is never a fault).
type LossBand struct {
	EMA    Num  `json:"train_loss_ema"`
	Median Num  `json:"median"`
	Spread Num  `json:"spread"`
	Z      Num  `json:"z"`
	Limit  Num  `json:"z_limit"`
	Within bool `json:"within_band"`
	Window int  `json:"window"`
}

// Healthy reports whether a reporter judged the checkpoint healthy.
func (h *Health) Healthy() bool { return h != nil && h.Status == HealthHealthy }

// FirstIncident is the earliest step of the open incidents, or 0 when none
// is open.
func (h *Health) FirstIncident() int {
	first := 0
	if h == nil {
		return 0
	}
	for _, in := range h.Incidents {
		if first == 0 || in.Step < first {
			first = in.Step
		}
	}
	return first
}

// Summary is the status in one word or phrase: "healthy", "unknown", or
// "unhealthy: rule@step, …" (or "unhealthy: loss out of band z=…").
func (h *Health) Summary() string {
	if h == nil || h.Status == "" {
		return HealthUnknown
	}
	if h.Status != HealthUnhealthy {
		return h.Status
	}
	var b []byte
	for i, in := range h.Incidents {
		if i > 0 {
			b = append(b, ',')
		}
		b = fmt.Appendf(b, "%s@%d", in.Rule, in.Step)
	}
	if len(h.Incidents) == 0 && h.Loss != nil && !h.Loss.Within {
		b = fmt.Appendf(b, "loss out of band z=%.1f", float64(h.Loss.Z))
	}
	if len(b) == 0 {
		return HealthUnhealthy
	}
	return HealthUnhealthy + ": " + string(b)
}

func NumPtr(v float64) *Num { n := Num(v); return &n }

// Num is a float64 in state.json written in the run directory's one number
// encoding (runlog.AppendFloat): NaN and ±Inf as "NaN", "Infinity",
// "-Infinity", which encoding/json alone cannot write.
type Num float64

// MarshalJSON implements json.Marshaler.
func (n Num) MarshalJSON() ([]byte, error) { return runlog.AppendFloat(nil, float64(n)), nil }

// UnmarshalJSON implements json.Unmarshaler: a number, or one of the three
// strings of the non-finite values.
func (n *Num) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if string(b) == "null" { // no value: left as it is, as encoding/json does
		return nil
	}
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		switch s {
		case "NaN":
			*n = Num(math.NaN())
		case "Infinity":
			*n = Num(math.Inf(1))
		case "-Infinity":
			*n = Num(math.Inf(-1))
		default:
			return fmt.Errorf("number %q: want a number, \"NaN\", \"Infinity\" or \"-Infinity\"", s)
		}
		return nil
	}
	v, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		return fmt.Errorf("number %s: %w", b, err)
	}
	*n = Num(v)
	return nil
}
