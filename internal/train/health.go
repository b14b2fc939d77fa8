package train

import (
	"math"

	"github.com/kestrel-lm/kestrel/internal/checkpoint"
	"github.com/kestrel-lm/kestrel/internal/runlog"
)

// HealthReporter is an optional Observer method: when a checkpoint is
// written, the loop asks the first observer implementing it for the
// checkpoint's health at step (1-based, the checkpoint's step). ok = false
// means it cannot judge (e.g. the monitor is off): the checkpoint's health
// is then unknown. Observers need not implement it.
type HealthReporter interface {
	CheckpointHealth(step int) (h checkpoint.Health, ok bool)
}

// IncidentCloser is an optional HealthReporter method: the first step of
// the earliest model incident of the trajectory that is still unclosed at
// step (0: none). checkpoint.Health.UnclosedSince records it.
type IncidentCloser interface {
	UnclosedSince(step int) int
}

// checkpointHealth is the health stamped into the checkpoint of step: the
// first reporter's judgement (else unknown) with the latest evaluation's
// losses.
func checkpointHealth(obs []Observer, step int, lastEval *runlog.Eval) *checkpoint.Health {
	h := checkpoint.Health{Status: checkpoint.HealthUnknown, Reason: "no health reporter (monitor off)"}
	for _, ob := range obs {
		if r, ok := ob.(HealthReporter); ok {
			if got, ok := r.CheckpointHealth(step); ok {
				h = got
				if c, ok := ob.(IncidentCloser); ok {
					h.UnclosedSince = c.UnclosedSince(step)
				}
				break
			}
		}
	}
	if h.Status != checkpoint.HealthHealthy && h.Status != checkpoint.HealthUnhealthy {
		h.Status = checkpoint.HealthUnknown
	}
	if e := lastEval; e != nil {
		h.ValStep = e.Step
		h.ValLoss = checkpoint.NumPtr(e.ValLoss)
		if !math.IsNaN(e.FixedProbeLoss) {
			h.ProbeLoss = checkpoint.NumPtr(e.FixedProbeLoss)
		}
	}
	return &h
}
