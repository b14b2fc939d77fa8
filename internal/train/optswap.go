package train

import (
	"fmt"
	"slices"

	"github.com/kestrel-lm/kestrel/internal/checkpoint"
)

// stateOptimizer is what checkpoint.State.Optimizer records for the
// optimizer name in force: the name, but "" for AdamW (checkpoints of
// AdamW runs stay as they were).
func stateOptimizer(name string) string {
	if name == "adamw" {
		return ""
	}
	return name
}

// optimName is the optimizer a checkpoint's state was written with.
func optimName(state string) string {
	if state == "" {
		return "adamw"
	}
	return state
}

// swapOptimizer turns the optimizer state just restored from a checkpoint
// (dir, its state s) that was written under another optimizer into this
// run's (optim.name), keeping the weights, the step, the data position and
// the schedule; it returns "from→to", or "" when the optimizer is the same.
// The state starts fresh only where it differs:
//
//   - adamw, nadamw, adamc among themselves: the same m, v and step count,
//     all kept; the clip and skip windows too (the update's scale is the same);
//   - to muon: the Muon matrices' momentum buffers (and their V) start at
//     zero; the AdamW group's moments and the step count are kept;
//   - from muon: the tensors Muon updated (those whose V is zero: Muon leaves
//     it so) get fresh Adam moments, the others keep theirs, and the step
//     count restarts at 0, so the bias correction of the fresh moments starts
//     as at step 1 (the kept moments are scaled by √bc2/bc1 for a while:
//     smaller steps, never larger).
//
// Across Muon the update's scale changes: the loss and gradient-norm windows
// (the skip-step's, which do not depend on the optimizer) are kept, and the
// update-norm window is rescaled at the first applied step to the new
// update norm (optim.AdamW.RebaseUpdateNorms), so update clipping and
// skip-step hold from the first step, as necromancy's seeded windows do.
func (t *trainer) swapOptimizer(dir string, s checkpoint.State) string {
	// The optimizer in force at the step training restarts from (optim.name,
	// or an [[optim.knobs]] entry's name up to that step).
	from, to := optimName(s.Optimizer), optimName(stateOptimizer(t.o.Optim.KnobsAt(t.st.Step, 0).Name))
	if from == to {
		return ""
	}
	var fresh []string
	switch {
	case to == "muon":
		for i, sp := range t.opt.Spans() {
			if t.opt.IsMuon(i) {
				clear(t.opt.M[sp.Offset : sp.Offset+sp.Size])
				clear(t.opt.V[sp.Offset : sp.Offset+sp.Size])
				fresh = append(fresh, sp.Name)
			}
		}
	case from == "muon":
		for _, sp := range t.opt.Spans() {
			v := t.opt.V[sp.Offset : sp.Offset+sp.Size]
			if sp.Size > 0 && !slices.ContainsFunc(v, func(x float32) bool { return x != 0 }) {
				clear(t.opt.M[sp.Offset : sp.Offset+sp.Size])
				fresh = append(fresh, sp.Name)
			}
		}
		t.opt.Steps = 0
	}
	if from == "muon" || to == "muon" {
		t.opt.RebaseUpdateNorms = true
	}
	swap := from + "→" + to
	t.log.Info("optimizer swap: weights, step, data position and schedule kept",
		"swap", swap, "checkpoint", dir, "step", s.Step, "fresh_state_tensors", len(fresh),
		"adam_steps", t.opt.Steps, "update_window_rebase", t.opt.RebaseUpdateNorms)
	return swap
}

// swapNote is the manifest's record of a swap at a start.
func swapNote(swap string, step int) string {
	if swap == "" {
		return ""
	}
	return fmt.Sprintf("%s at step %d", swap, step)
}
