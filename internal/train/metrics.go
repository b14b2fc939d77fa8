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
