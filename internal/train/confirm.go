package train

import "github.com/kestrel-lm/kestrel/internal/checkpoint"

// IncidentReporter is an optional Observer method beside HealthReporter:
// the model incidents (SEV0/SEV1 alerts about the weights, not the
// machine) of the current trajectory fired at steps in (from, to]. The
// trainer confirms or rejects a checkpoint with it. Observers need not
// implement it; without one, checkpoints are confirmed on their probe
// alone.
type IncidentReporter interface {
	ModelIncidents(from, to int) []checkpoint.Incident
}

// confirmPending decides the pending checkpoints of the run older than the
// one just written at step `through` (end: the run's last step, when the
// run finished): each is confirmed when the model incidents of the steps
// after it up to the next checkpoint are none and its probe is within the
// band of the confirmed or pending checkpoint before it; else rejected.
// The checkpoint at `through` itself is decided only at the end of the
// run. Errors are warnings: an undecided checkpoint stays pending.
func (t *trainer) confirmPending(through int, end bool) {
	list, err := checkpoint.ListDir(t.ckRoot)
	if err != nil {
		t.log.Warn("checkpoint confirmation", "err", err)
		return
	}
	var rep IncidentReporter
	for _, ob := range t.o.Observers {
		if r, ok := ob.(IncidentReporter); ok {
			rep = r
			break
		}
	}
	// oldest first
	for i := len(list) - 1; i >= 0; i-- {
		c := list[i]
		if c.Step > through || (c.Step == through && !end) {
			continue
		}
		conf, err := checkpoint.ReadConfirmation(c.Dir)
		if err != nil {
			t.log.Warn("checkpoint confirmation", "err", err)
			continue
		}
		if conf != nil {
			continue // decided already: its state.json is not read again
		}
		st, err := checkpoint.ReadState(c.Dir)
		if err != nil || checkpoint.StatusOf(st.Health, nil) != checkpoint.StatusPending {
			continue
		}
		next := through
		if i > 0 && list[i-1].Step <= through {
			next = list[i-1].Step
		}
		var incidents []checkpoint.Incident
		if rep != nil {
			incidents = rep.ModelIncidents(st.Step, next)
		}
		d := checkpoint.Decide(st, list[i+1:], incidents, next, t.o.Checkpoint.ConfirmProbeRise, t.o.Model.Vocab)
		if err := checkpoint.WriteConfirmation(c.Dir, d); err != nil {
			t.log.Warn("checkpoint confirmation", "dir", c.Dir, "err", err)
			continue
		}
		lvl := t.log.Info
		if d.Status == checkpoint.Rejected {
			lvl = t.log.Warn
		}
		lvl("checkpoint "+d.Status, "step", st.Step, "through", d.Through, "reason", d.Reason)
	}
}
