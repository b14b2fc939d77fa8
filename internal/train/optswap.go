package train

import (
	"fmt"

	"github.com/kestrel-lm/kestrel/internal/checkpoint"
)

// swapOptimizer turns the optimizer state just restored from a checkpoint
// (dir, its state s) that was written under another optimizer into this
// run's (the optimizer in force at the restart step: optim.name, or an
// [[optim.knobs]] entry's name up to that step), keeping the weights, the
// step, the data position and the schedule (optim.AdamW.SwapState says
// which state starts fresh); it returns "from→to", or "" when the
// optimizer is the same.
func (t *trainer) swapOptimizer(dir string, s checkpoint.State) string {
	from := checkpoint.OptimizerName(s.Optimizer)
	to := checkpoint.OptimizerName(checkpoint.StateOptimizer(t.o.Optim.KnobsAt(t.st.Step, 0).Name))
	if from == to {
		return ""
	}
	fresh := t.opt.SwapState(from, to)
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
