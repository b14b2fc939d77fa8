package run

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/kestrel-lm/kestrel/internal/rewind"

	"github.com/kestrel-lm/kestrel/internal/checkpoint"

	"github.com/kestrel-lm/kestrel/internal/atomicfile"
	"github.com/kestrel-lm/kestrel/internal/config"
	"github.com/kestrel-lm/kestrel/internal/runlock"
	"github.com/kestrel-lm/kestrel/internal/runlog"
	"github.com/kestrel-lm/kestrel/internal/train"
	"github.com/kestrel-lm/kestrel/monitor"
)

// ByAuto is the runlog.Intervention.By of an automatic rollback.
const ByAuto = "auto"

// rollbackPlan is one automatic rollback of the rescue ladder: the
// checkpoint to go back to and the rewind to record.
type rollbackPlan struct {
	n     int          // this rollback's number in the run (1-based)
	rung  int          // the ladder's rung (1 or 2)
	on    string       // the trigger (train.RescueOn…)
	alert runlog.Alert // the incident that ended the attempt
	rewind.Options
}

// autoRollbacks returns the automatic rollbacks recorded in the run's
// interventions.jsonl (over every invocation, so a restarted run keeps
// its count and its rung), oldest first.
func autoRollbacks(dir string) ([]runlog.Intervention, error) {
	all, err := runlog.ReadInterventions(dir)
	if err != nil {
		return nil, err
	}
	var out []runlog.Intervention
	for _, iv := range all {
		if iv.By == ByAuto {
			out = append(out, iv)
		}
	}
	return out, nil
}

// incidentOf is the incident that ended an attempt, as a trigger of the
// ladder: a SEV0 divergence or nan_inf that paused the run, a NaN stop, or
// a data event the observer stopped the run on; ok is false for any other
// ending.
func incidentOf(ob *Observer, runErr error) (on string, a runlog.Alert, ok bool) {
	var nanErr *train.NaNError
	switch pa, paused := ob.PausedBy(); {
	case ob.dataEvent != nil:
		return rewind.RescueOnDataEvent, *ob.dataEvent, true
	case paused && pa.Severity == monitor.SEV0 && pa.Rule == monitor.RuleDivergence:
		return rewind.RescueOnDivergence, pa, true
	case paused && pa.Severity == monitor.SEV0 && pa.Rule == monitor.RuleNaNInf:
		return rewind.RescueOnNaN, pa, true
	case errors.As(runErr, &nanErr):
		return rewind.RescueOnNaN, runlog.Alert{Step: int64(nanErr.Step), Severity: monitor.SEV0, Rule: monitor.RuleNaNInf, Metric: "nan_inf_events", Message: nanErr.Error()}, true
	}
	return "", runlog.Alert{}, false
}

// planRollback decides whether the way train.Run ended calls for the
// rescue ladder: [rescue] auto_rollback is on and the attempt ended on an
// incident rescue.on names. It returns nil (and no error) when it does
// not. An error means the ladder stops (rung 3: the incident recurred
// after rung 2, max_rollbacks were taken, or no confirmed checkpoint lies
// before the incident): the run stops with it, and stopLadder writes the
// rescue summary.
func planRollback(ctx context.Context, cfg config.Config, dir string, ob *Observer, runErr error) (*rollbackPlan, error) {
	rc := cfg.Rescue
	if !rc.AutoRollback || ctx.Err() != nil {
		return nil, nil
	}
	on, a, ok := incidentOf(ob, runErr)
	if !ok || !slices.Contains(rc.On, on) {
		return nil, nil
	}
	done, err := autoRollbacks(dir)
	if err != nil {
		return nil, fmt.Errorf("auto rollback: %w", err)
	}
	p := &rollbackPlan{n: len(done) + 1, rung: rungOf(done, on, a, rc), on: on, alert: a}
	if p.rung >= 3 {
		prev := done[len(done)-1]
		return nil, fmt.Errorf("rescue ladder, rung 3: %s %s at step %d recurred after rung 2 (intervention %s: rewind, skip, LR ×%g for the rest of the run, tighter update clipping); stopping", a.Severity, a.Rule, a.Step, prev.ID, prev.LRScale)
	}
	if len(done) >= rc.MaxRollbacks {
		return nil, fmt.Errorf("rescue ladder, rung 3: rescue.max_rollbacks = %d reached (%d taken in this run); stopping on %s %s at step %d", rc.MaxRollbacks, len(done), a.Severity, a.Rule, a.Step)
	}
	if err := p.fill(cfg, dir, ob.alerts()); err != nil {
		return nil, err
	}
	return p, nil
}

// rungOf is the rung of the ladder for the incident a on trigger on: one
// above the previous automatic rollback's when it acted on the same
// trigger and the incident came within recur_steps after its window, else
// rung 1.
func rungOf(done []runlog.Intervention, on string, a runlog.Alert, rc rewind.RescueConfig) int {
	if len(done) == 0 {
		return 1
	}
	prev := done[len(done)-1]
	if prev.Trigger == on && int(a.Step) <= max(prev.SkipTo, prev.ToStep)+rc.RecurSteps {
		return max(prev.Rung, 1) + 1
	}
	return 1
}

// fill works out the rewind of the plan's rung: the confirmed checkpoint
// (or the initialisation) before the incident's first precursor, the skip
// window, and for rung 2 the LR for the rest of the run and tighter update
// clipping (never looser than the run's own).
func (p *rollbackPlan) fill(cfg config.Config, dir string, alerts []runlog.Alert) error {
	rc := cfg.Rescue
	spike := int(p.alert.Step)
	from := spike
	if rc.SkipWindow > 0 {
		from = precursor(alerts, 0, spike, rc.SkipWindow)
	}
	ck, err := rollbackTarget(cfg, dir, from)
	if err != nil {
		return fmt.Errorf("rescue ladder, rung 3: %w", err)
	}
	p.To = strconv.Itoa(ck)
	if ck == 0 {
		p.To = rewind.Init
	}
	p.By, p.Rung, p.Trigger = ByAuto, p.rung, p.on
	p.Reason = fmt.Sprintf("auto rollback (rescue ladder rung %d, on %s): %s", p.rung, p.on, p.alert.Message)
	if rc.SkipWindow > 0 {
		all, err := runlog.ReadInterventions(dir)
		if err != nil {
			return fmt.Errorf("auto rollback: %w", err)
		}
		p.SkipFrom, p.SkipTo, _ = rewind.RescueSkip(all, ck, from, spike+rc.SkipWindow-1)
	}
	switch p.rung {
	case 1:
		if rc.LRScale != 1 {
			p.LRScale, p.LRSteps = rc.LRScale, rc.LRSteps
		}
	case 2:
		sigma := rc.Rung2Sigma
		if o := cfg.Optim; o.ClipUpdateNorm && o.UpdateSigma < sigma {
			sigma = o.UpdateSigma
		}
		p.LRScale, p.LRSteps = rc.Rung2LRScale, 0
		p.Set = map[string]string{
			"optim.clip_update_norm":      "true",
			"optim.update_clip_sigma":     strconv.FormatFloat(sigma, 'g', -1, 64),
			"optim.update_clip_min_steps": strconv.Itoa(min(8, max(cfg.Optim.UpdateMinSteps, 1))),
		}
	}
	return nil
}

// rollbackTarget is the step the ladder goes back to for an incident whose
// first bad step is from: the newest confirmed checkpoint before it, else
// the run's initialisation (0) when every checkpoint before it is still
// pending — an incident in the first steps of a fresh run, before any
// checkpoint could be confirmed, restarts it from its own initial weights.
func rollbackTarget(cfg config.Config, dir string, from int) (int, error) {
	target, err := checkpoint.LastGoodBefore(dir, from)
	if err == nil {
		l, err := checkpoint.Load(target)
		if err != nil {
			return 0, fmt.Errorf("last-good checkpoint %s: %w", target, err)
		}
		return l.State.Step, nil
	}
	if !errors.Is(err, checkpoint.ErrNoLastGood) || cfg.Init.From != "" {
		return 0, err
	}
	list, lerr := checkpoint.List(dir)
	if lerr != nil {
		return 0, lerr
	}
	for _, c := range list {
		if c.Step < from && c.Status != checkpoint.StatusPending {
			return 0, err // a checkpoint was judged and found wanting: not a fresh run's first steps
		}
	}
	return 0, nil
}

// precursor is the first step of the incident: the earliest SEV0/SEV1
// alert about the model (not the machine or the records) within skipWindow
// steps before the incident at step spike, and after step ck.
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

// stopLadder is rung 3: the ladder gives up. It writes the rescue summary
// (what was tried, the incident and its evidence) into the incident's
// bundle (one is written for a SEV1 that has none) and returns the
// summary's path.
func stopLadder(dir string, ob *Observer, runErr, why error) string {
	_, a, ok := incidentOf(ob, runErr)
	if !ok {
		return ""
	}
	if a.Evidence == "" && ob.m != nil {
		if ev, err := ob.m.WriteIncident(a); err == nil {
			a.Evidence = ev
		}
	}
	done, _ := autoRollbacks(dir)
	var b strings.Builder
	fmt.Fprintf(&b, "# Rescue summary\n\nThe rescue ladder stopped the run: %v\n\nIncident: %s %s at step %d: %s\n\n", why, a.Severity, a.Rule, a.Step, a.Message)
	if len(done) == 0 {
		b.WriteString("No automatic rollback was taken before.\n")
	} else {
		b.WriteString("Tried:\n\n")
		for _, iv := range done {
			fmt.Fprintf(&b, "- %s (rung %d): %s\n", iv.ID, iv.Rung, iv.Summary())
		}
	}
	b.WriteString("\nNext: read the incident bundle beside this file, `kestrel incidents RUN`, `kestrel checkpoints RUN`; fix the cause (LR, data, config), then `kestrel rewind RUN --to last-good …` and rerun the same `kestrel train` (docs/rescue.md).\n")
	rel := a.Evidence
	if rel == "" {
		rel = "."
	}
	path := filepath.Join(dir, rel, "RESCUE.md")
	if err := atomicfile.WriteFile(path, []byte(b.String())); err != nil {
		return ""
	}
	return path
}

// note records the rollback as a note event on the monitor of the attempt
// that ended (the dashboard marks it beside the incident); called before
// that monitor is closed. It returns the note's text.
func (p *rollbackPlan) note(ob *Observer, max int) string {
	msg := fmt.Sprintf("auto rollback %d of %d (rescue ladder rung %d, on %s): %s %s at step %d → checkpoint step %s", p.n, max, p.rung, p.on, p.alert.Severity, p.alert.Rule, p.alert.Step, p.To)
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
	o := p.Options
	o.Lock, o.Logger = lk, log
	iv, err := rewind.Rewind(dir, o)
	if err != nil {
		return iv, fmt.Errorf("auto rollback: %w", err)
	}
	return iv, nil
}
