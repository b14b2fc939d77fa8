package rewind

import (
	"fmt"
	"slices"

	"github.com/kestrel-lm/kestrel/internal/checkpoint"
	"github.com/kestrel-lm/kestrel/internal/runlog"
)

// Effective returns the interventions of a run's log that
// shape its current trajectory, in order: a later rewind to step S
// supersedes every earlier intervention whose ToStep is S or later (the
// steps those governed were rolled back again). The data offset, the LR
// scale and the config overrides of a run are functions of this list.
func Effective(all []runlog.Intervention) []runlog.Intervention {
	var out []runlog.Intervention
	for _, iv := range all {
		keep := out[:0]
		for _, p := range out {
			if p.ToStep < iv.ToStep {
				keep = append(keep, p)
			}
		}
		out = append(keep, iv)
	}
	return out // ToStep strictly increases along it
}

// MaxSkipStep bounds skip windows: no window may name a step above it, and
// the data steps skipped in all (the data offset) may not exceed it. It is
// 2³¹−1, beyond the length of any run, and small enough that a step plus
// its data offset, times any global batch and sequence length, stays far
// from overflowing an int (an unbounded window made the loader index
// overflow and panic).
const MaxSkipStep = 1<<31 - 1

// Check checks what the trajectory depends on in a run's
// interventions (in the order of interventions.jsonl): every skip window
// lies within steps 1…MaxSkipStep and starts after its intervention's
// checkpoint, and the data steps the effective interventions skip add up to
// at most MaxSkipStep. On error it returns the index of the intervention at
// fault, for the caller to name its line.
func Check(all []runlog.Intervention) (int, error) {
	for i, iv := range all {
		if iv.SkipSteps == 0 {
			continue
		}
		if err := CheckSkipWindow(iv.SkipFrom, iv.SkipTo, iv.ToStep); err != nil {
			return i, err
		}
	}
	total := 0
	for _, iv := range Effective(all) {
		total += iv.SkipSteps // each ≤ MaxSkipStep: no overflow before the check
		if total > MaxSkipStep {
			i := slices.IndexFunc(all, func(x runlog.Intervention) bool { return x.ID == iv.ID })
			return i, fmt.Errorf("the skip windows add up to more than %d data steps (MaxSkipStep)", MaxSkipStep)
		}
	}
	return -1, nil
}

// CheckSkipWindow checks a skip window from:to of a rewind to the
// checkpoint of step ckpt.
func CheckSkipWindow(from, to, ckpt int) error {
	switch {
	case from < 1:
		return fmt.Errorf("skip window %d:%d: want 1 ≤ A ≤ B", from, to)
	case to < from:
		return fmt.Errorf("skip window %d:%d: the window ends before it starts", from, to)
	case to > MaxSkipStep:
		return fmt.Errorf("skip window %d:%d: ends after step %d (MaxSkipStep), beyond any run", from, to, MaxSkipStep)
	case from <= ckpt:
		return fmt.Errorf("skip window %d:%d: the window must start after the checkpoint's step %d (its batches were trained on already)", from, to, ckpt)
	}
	return nil
}

// DataIndex is the 0-based data step index whose batch the 1-based step
// trains on under the effective interventions ivs (Effective):
// step−1 plus the data steps skipped before it.
func DataIndex(ivs []runlog.Intervention, step int) int {
	p := Plan{ivs: ivs}
	return p.DataIndex(step)
}

// RescueSkip is the skip window of a new rewind of a run whose
// interventions so far are all (in order), back to the checkpoint of step
// ck, that must skip the batches steps from…to trained in the current
// trajectory. A rewind to ck supersedes the effective interventions whose
// ToStep is ck or later, and their skip windows with them: the window
// returned covers, in data steps, the hull of what they skipped and of
// the batches of from…to, so that no batch any of them skipped, nor the
// new ones, is trained again (the few clean batches between two windows
// are skipped too). It starts after ck. ok is false when there is nothing
// to skip.
func RescueSkip(all []runlog.Intervention, ck, from, to int) (skipFrom, skipTo int, ok bool) {
	if to < from {
		return 0, 0, false
	}
	eff := Effective(all)
	lo, hi := DataIndex(eff, from), DataIndex(eff, to) // 0-based data steps
	var kept []runlog.Intervention
	for i, iv := range all {
		if !slices.ContainsFunc(eff, func(x runlog.Intervention) bool { return x.ID == iv.ID }) {
			continue
		}
		if iv.ToStep < ck {
			kept = append(kept, iv)
			continue
		}
		if iv.SkipSteps > 0 { // superseded by the new rewind: keep what it skipped
			d0 := DataIndex(Effective(all[:i]), iv.SkipFrom)
			lo, hi = min(lo, d0), max(hi, d0+iv.SkipSteps-1)
		}
	}
	// In the new trajectory step s > ck trains data DataIndex(kept, s)
	// (the kept windows may lie after ck) until the new window: it starts
	// at the first step that would train data lo or later, and skips up
	// to hi.
	skipFrom = ck + 1
	for DataIndex(kept, skipFrom) < lo {
		skipFrom++
	}
	n := hi - DataIndex(kept, skipFrom) + 1
	if n <= 0 {
		return 0, 0, false // the kept windows skip it already
	}
	return skipFrom, skipFrom + n - 1, true
}

// Plan answers, for a 1-based step s, what the effective
// interventions change: the data offset (the batch of step s is
// DataSource.Fill(s−1+offset)) and the LR scale. The schedule and the
// batch schedule still count real steps.
type Plan struct {
	ivs []runlog.Intervention // strictly increasing ToStep (Effective)
	ids []string              // their ids, shared by Applied's prefixes
}

func NewPlan(ivs []runlog.Intervention) Plan {
	p := Plan{ivs: ivs}
	for _, iv := range ivs {
		p.ids = append(p.ids, iv.ID)
	}
	return p
}

// DataOffset is the number of data steps skipped before step s: the sum of
// SkipSteps of the effective interventions whose window starts at or
// before s. The window A:B of an intervention names training steps of the
// trajectory it rewound (the batches steps A…B would have used are never
// used), so steps ToStep+1 … A−1 keep their own batches.
// The sum saturates at MaxSkipStep (Check refuses a log whose
// windows add up to more), so s−1+offset never overflows.
func (p *Plan) DataOffset(s int) int {
	off := 0
	for _, iv := range p.ivs {
		if iv.SkipSteps > 0 && s >= iv.SkipFrom {
			off += min(iv.SkipSteps, MaxSkipStep-off)
		}
	}
	return off
}

// DataIndex is the 0-based data step whose batch step s trains on:
// s−1 plus the data steps skipped before it (DataOffset).
func (p *Plan) DataIndex(s int) int { return s - 1 + p.DataOffset(s) }

// LRScale is the factor on the learning rate of step s: that of the newest
// effective intervention before s, for its LRSteps steps after ToStep (0:
// until the next intervention), else 1.
func (p *Plan) LRScale(s int) float64 {
	for i := len(p.ivs) - 1; i >= 0; i-- {
		iv := p.ivs[i]
		if iv.ToStep >= s {
			continue
		}
		if iv.LRScale > 0 && iv.LRScale != 1 && (iv.LRSteps == 0 || s <= iv.ToStep+iv.LRSteps) {
			return iv.LRScale
		}
		return 1
	}
	return 1
}

// Applied lists the ids of the effective interventions that shaped step s
// (those whose ToStep is below s): a prefix of the list, without
// allocating (the step allocates nothing).
func (p *Plan) Applied(s int) []string {
	k := 0
	for k < len(p.ivs) && p.ivs[k].ToStep < s {
		k++
	}
	if k == 0 {
		return nil
	}
	return p.ids[:k:k]
}

// OnTrajectory checks that a checkpoint's state (nil or step 0: a fresh
// start) belongs to the trajectory the plan defines: its recorded data
// offset and intervention ids must be what the plan gives for its step.
func (p *Plan) OnTrajectory(st *checkpoint.State) error {
	if st == nil || st.Step == 0 {
		return nil
	}
	want, ids := p.DataOffset(st.Step), p.Applied(st.Step)
	if st.DataOffset != want || fmt.Sprint(st.Interventions) != fmt.Sprint(ids) {
		return fmt.Errorf("checkpoint of step %d has data offset %d and interventions %v, but %s gives %d and %v for that step: it belongs to a trajectory a rewind abandoned",
			st.Step, st.DataOffset, st.Interventions, runlog.InterventionsFile, want, ids)
	}
	return nil
}
