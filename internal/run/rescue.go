package run

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"strconv"

	"github.com/kestrel-lm/kestrel/internal/config"
	"github.com/kestrel-lm/kestrel/internal/runlock"
	"github.com/kestrel-lm/kestrel/internal/runlog"
	"github.com/kestrel-lm/kestrel/internal/train"
	"github.com/kestrel-lm/kestrel/monitor"
)

// ByAuto is the runlog.Intervention.By of an automatic rollback.
const ByAuto = "auto"

// rollbackPlan is one automatic rollback ([rescue] auto_rollback): the
// checkpoint to go back to and the rewind to record.
type rollbackPlan struct {
	n     int          // this rollback's number in the run (1-based)
	alert runlog.Alert // the SEV0 divergence that paused the run
	train.RewindOptions
}

// autoRollbacks counts the automatic rollbacks recorded in the run's
// interventions.jsonl (over every invocation, so a restarted run keeps
// its count).
func autoRollbacks(dir string) (int, error) {
	all, err := runlog.ReadInterventions(dir)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, iv := range all {
		if iv.By == ByAuto {
			n++
		}
	}
	return n, nil
}

// planRollback decides whether the way train.Run ended calls for an
// automatic rollback: the monitor paused the run on a SEV0 divergence,
// [rescue] auto_rollback is on and fewer than max_rollbacks were taken.
// It returns nil (and no error) when it does not. An error means a
// rollback was due but cannot be made (no last-good checkpoint, or one at
// or after the spike): the run stops with it.
func planRollback(ctx context.Context, cfg config.Config, dir string, ob *Observer) (*rollbackPlan, error) {
	rc := cfg.Rescue
	if !rc.AutoRollback || ctx.Err() != nil {
		return nil, nil
	}
	a, ok := ob.PausedBy()
	if !ok || a.Rule != monitor.RuleDivergence || a.Severity != monitor.SEV0 {
		return nil, nil
	}
	done, err := autoRollbacks(dir)
	if err != nil {
		return nil, fmt.Errorf("auto rollback: %w", err)
	}
	if done >= rc.MaxRollbacks {
		return nil, fmt.Errorf("auto rollback: not taken, rescue.max_rollbacks = %d reached (%d taken in this run)", rc.MaxRollbacks, done)
	}
	target, err := train.ResolveCheckpoint(dir, "last-good")
	if err != nil {
		return nil, fmt.Errorf("auto rollback: %w", err)
	}
	l, err := train.LoadCheckpoint(target)
	if err != nil {
		return nil, fmt.Errorf("auto rollback: last-good checkpoint %s: %w", target, err)
	}
	ck, spike := l.State.Step, int(a.Step)
	if ck >= spike {
		return nil, fmt.Errorf("auto rollback: the last-good checkpoint (step %d) is not before the divergence at step %d", ck, spike)
	}
	p := &rollbackPlan{n: done + 1, alert: a}
	p.To = strconv.Itoa(ck)
	p.By = ByAuto
	p.Reason = fmt.Sprintf("auto rollback: %s", a.Message)
	if rc.LRScale != 1 {
		p.LRScale, p.LRSteps = rc.LRScale, rc.LRSteps
	}
	if rc.SkipWindow > 0 {
		p.SkipFrom = precursor(ob.alerts(), ck, spike, rc.SkipWindow)
		p.SkipTo = spike + rc.SkipWindow - 1
		p.Set = clearedFaults(cfg.Debug, p.SkipFrom, p.SkipTo)
	}
	return p, nil
}

// precursor is the first step of the spike: the earliest SEV0/SEV1 alert
// about the model (not the machine or the records) within skipWindow steps
// before the divergence at step spike, and after the checkpoint's step ck.
func precursor(alerts []runlog.Alert, ck, spike, skipWindow int) int {
	first := spike
	lo := max(ck+1, spike-skipWindow)
	for _, a := range alerts {
		s := int(a.Step)
		if (a.Severity == monitor.SEV0 || a.Severity == monitor.SEV1) && !infraRules[a.Rule] && s >= lo && s < first {
			first = s
		}
	}
	return first
}

// clearedFaults turns off the [debug] fault injections that lie wholly
// inside the skipped window from..to: an injected fault stands for a
// transient event of those steps (a bad batch, a bad update), which the
// rollback skips. One that reaches past the window stays, and diverges
// again. The overrides are recorded in the intervention's set.
func clearedFaults(d train.DebugConfig, from, to int) map[string]string {
	set := map[string]string{}
	if s := d.LRSpikeAtStep; s > 0 && s >= from && s+max(d.LRSpikeSteps, 1)-1 <= to {
		set["debug.lr_spike_at_step"] = "0"
	}
	if s := d.CorruptBatchAtStep; s > 0 && s >= from && s <= to {
		set["debug.corrupt_batch_at_step"] = "0"
	}
	if len(set) == 0 {
		return nil
	}
	return set
}

// note records the rollback as a note event on the monitor of the attempt
// that ended (the dashboard marks it beside the incident); called before
// that monitor is closed. It returns the note's text.
func (p *rollbackPlan) note(ob *Observer, max int) string {
	msg := fmt.Sprintf("auto rollback %d of %d: %s %s at step %d → checkpoint step %s", p.n, max, p.alert.Severity, p.alert.Rule, p.alert.Step, p.To)
	if p.SkipFrom > 0 {
		msg += fmt.Sprintf(", skipping the batches of steps %d–%d", p.SkipFrom, p.SkipTo)
	}
	if p.LRScale > 0 {
		msg += fmt.Sprintf(", LR ×%g for %d steps", p.LRScale, p.LRSteps)
	}
	keys := make([]string, 0, len(p.Set))
	for k := range p.Set {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		msg += fmt.Sprintf(", %s = %s", k, p.Set[k])
	}
	ob.Note(int(p.alert.Step), msg)
	return msg
}

// rewind carries the plan out under the lock the trainer holds.
func (p *rollbackPlan) rewind(dir string, lk *runlock.Lock, log *slog.Logger) (*runlog.Intervention, error) {
	o := p.RewindOptions
	o.Lock, o.Logger = lk, log
	iv, err := train.Rewind(dir, o)
	if err != nil {
		return iv, fmt.Errorf("auto rollback: %w", err)
	}
	return iv, nil
}
