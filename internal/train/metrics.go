package train

import "github.com/kestrel-lm/kestrel/internal/runlog"

// Observer receives every step, evaluation and checkpoint as typed records
// (the monitor implements it through internal/run). An error from OnStep
// stops the run without writing a new checkpoint, so the last good one
// stays the newest.
type Observer interface {
	OnStep(*runlog.Step) error
	OnEval(*runlog.Eval) error
	OnCheckpoint(*runlog.Checkpoint) error
}

// StepStarter is an optional Observer method: the loop calls OnStepStart
// when step (1-based, as in metrics.jsonl) begins, before its data wait, so
// a watchdog can tell a step that hangs from the evaluation or checkpoint
// that runs between steps. Observers need not implement it.
type StepStarter interface {
	OnStepStart(step int)
}

// stepStarted tells every observer implementing StepStarter that step began.
func stepStarted(obs []Observer, step int) {
	for _, ob := range obs {
		if ss, ok := ob.(StepStarter); ok {
			ss.OnStepStart(step)
		}
	}
}
