package checkpoint

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/kestrel-lm/kestrel/internal/atomicfile"
)

// ConfirmFile is the file in a checkpoint directory that records whether
// the checkpoint's health was confirmed by the steps after it. It is
// written after the checkpoint (so it is not in SHA256SUMS) and moves with
// the checkpoint when a rewind archives it.
const ConfirmFile = "confirmation.json"

// Confirmation outcomes (Confirmation.Status).
const (
	// Confirmed: the checkpoint was healthy when written, its own probe is
	// within the band of the checkpoint before it, and the steps after it up
	// to the next checkpoint (or the end of the run) raised no model
	// incident. Only a confirmed checkpoint can be last-good.
	Confirmed = "confirmed"
	// Rejected: the probe or the steps after it showed that the update
	// just before the checkpoint, or the state it holds, was bad.
	Rejected = "rejected"
)

// Checkpoint statuses as `kestrel checkpoints` shows them
// (Info.Status): Confirmed, Rejected, and these.
const (
	// StatusPending: healthy when written, not yet confirmed (the steps
	// after it have not reached the next checkpoint).
	StatusPending = "pending"
	// StatusUnhealthy: an incident was open or the loss out of its band
	// when it was written.
	StatusUnhealthy = HealthUnhealthy
	// StatusUnknown: no health reporter judged it.
	StatusUnknown = HealthUnknown
)

// Confirmation is a checkpoint's confirmation.json.
type Confirmation struct {
	Status string `json:"status"` // confirmed | rejected
	// Through is the last step the decision saw: the next checkpoint's
	// step, or the run's last step.
	Through int `json:"through_step"`
	// Incidents are the model incidents of the steps after the checkpoint
	// (a rejection's cause).
	Incidents []Incident `json:"incidents,omitempty"`
	// Probe is the checkpoint's own fixed_probe_loss, PrevProbe that of
	// the checkpoint it was compared with (at PrevStep), Limit the bound.
	Probe     *Num   `json:"checkpoint_probe_loss,omitempty"`
	PrevProbe *Num   `json:"prev_probe_loss,omitempty"`
	PrevStep  int    `json:"prev_step,omitempty"`
	Limit     *Num   `json:"probe_limit,omitempty"`
	Reason    string `json:"reason"`
	// Verification is "failed" (VerifyFailed) for a checkpoint whose
	// verification after the write failed (verify.go); "" otherwise.
	Verification string `json:"verification,omitempty"`
}

// ReadConfirmation reads a checkpoint's confirmation.json; nil when there
// is none.
func ReadConfirmation(dir string) (*Confirmation, error) {
	p := filepath.Join(dir, ConfirmFile)
	data, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var c Confirmation
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	if c.Status != Confirmed && c.Status != Rejected {
		return nil, fmt.Errorf("%s: status %q: want %q or %q", p, c.Status, Confirmed, Rejected)
	}
	return &c, nil
}

func WriteConfirmation(dir string, c *Confirmation) error {
	data, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(filepath.Join(dir, ConfirmFile), append(data, '\n'))
}

// StatusOf is a checkpoint's status from its health at writing and its
// confirmation.
func StatusOf(h *Health, c *Confirmation) string {
	switch {
	case c != nil && c.Verification == VerifyFailed:
		return Rejected // corrupt, whatever its health
	case h == nil || h.Status == "" || h.Status == HealthUnknown:
		return StatusUnknown
	case h.Status == HealthUnhealthy:
		return StatusUnhealthy
	case c == nil:
		return StatusPending
	}
	return c.Status
}

// Decide confirms or rejects the pending checkpoint st, whose older
// checkpoints are older (newest first), after the steps up to next, in
// which the model incidents were incidents: rise is
// checkpoint.confirm_probe_rise, vocab the model's vocabulary (its ln V
// bounds the probe).
func Decide(st *State, older []Entry, incidents []Incident, next int, rise float64, vocab int) *Confirmation {
	d := &Confirmation{Status: Confirmed, Through: next, Incidents: incidents}
	var why []string
	for _, in := range incidents {
		why = append(why, fmt.Sprintf("%s %s at step %d", in.Severity, in.Rule, in.Step))
	}
	if h := st.Health; h != nil && h.Probe != nil {
		d.Probe = h.Probe
		if prev, step, ok := prevProbe(older); ok {
			lim := prev + rise // the highest probe within the band
			d.PrevProbe, d.PrevStep, d.Limit = NumPtr(prev), step, NumPtr(lim)
			if p := float64(*h.Probe); !(p <= lim) {
				why = append(why, fmt.Sprintf("its probe loss %.4g is above %.4g (the probe of step %d, %.4g, + checkpoint.confirm_probe_rise %.3g)", p, lim, step, prev, rise))
			}
		}
		if v := vocab; v > 1 {
			if p, u := float64(*h.Probe), math.Log(float64(v)); !(p <= u+rise) {
				why = append(why, fmt.Sprintf("its probe loss %.4g is worse than a uniform prediction (ln V = %.4g)", p, u))
			}
		}
	}
	if len(why) > 0 {
		d.Status, d.Reason = Rejected, strings.Join(why, "; ")
		return d
	}
	d.Reason = fmt.Sprintf("steps %d-%d raised no model incident; probe within its band", st.Step+1, next)
	if next == st.Step {
		d.Reason = "the run's last checkpoint; probe within its band"
	}
	return d
}

// prevProbe is the checkpoint probe of the newest older checkpoint that
// is not unhealthy or rejected and measured one.
func prevProbe(older []Entry) (probe float64, step int, ok bool) {
	for _, c := range older {
		st, err := ReadState(c.Dir)
		if err != nil || st.Health == nil || st.Health.Probe == nil {
			continue
		}
		conf, _ := ReadConfirmation(c.Dir)
		switch StatusOf(st.Health, conf) {
		case Confirmed, StatusPending:
			return float64(*st.Health.Probe), st.Step, true
		}
	}
	return 0, 0, false
}
