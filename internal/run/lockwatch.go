package run

import (
	"github.com/kestrel-lm/kestrel/internal/runlock"
	"github.com/kestrel-lm/kestrel/internal/runlog"
)

// lockWatch is the observer that keeps the run directory's lock honest: at
// every step and after every checkpoint it verifies that the lock file is
// still the one this trainer took (runlock.Lock.Check). A lock file removed
// or replaced while the run trains (by hand, or by a tool that cleans the
// directory) lets a second trainer in; this trainer then stops with the
// *runlock.LostError before it writes another checkpoint, instead of
// sharing the directory unnoticed. The loop calls the step's observers
// before it decides on a checkpoint, so no checkpoint follows an unchecked
// step.
type lockWatch struct{ lk *runlock.Lock }

// OnStep checks the lock after each step.
func (w lockWatch) OnStep(*runlog.Step) error { return w.lk.Check() }

// OnEval has nothing to check.
func (w lockWatch) OnEval(*runlog.Eval) error { return nil }

// OnCheckpoint checks the lock after each checkpoint.
func (w lockWatch) OnCheckpoint(*runlog.Checkpoint) error { return w.lk.Check() }
