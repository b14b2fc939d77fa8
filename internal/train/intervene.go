package train

import (
	"fmt"
	"path/filepath"

	"github.com/kestrel-lm/kestrel/internal/checkpoint"
	"github.com/kestrel-lm/kestrel/internal/faults"
	"github.com/kestrel-lm/kestrel/internal/rewind"
	"github.com/kestrel-lm/kestrel/internal/runlog"
)

// loadInterventions reads the run's interventions and checks that the
// checkpoint resumed from (state, nil for a fresh start) belongs to the
// trajectory they define: its recorded data offset and intervention ids
// must be what the log gives for its step. A checkpoint written on a
// trajectory that a rewind abandoned (left in checkpoints/ by hand) is
// refused rather than resumed with the wrong data.
func (t *trainer) loadInterventions(st *checkpoint.State) error {
	all, err := runlog.ReadInterventions(t.o.Dir)
	if err != nil {
		return fmt.Errorf("train: %w", err)
	}
	if i, err := rewind.Check(all); err != nil {
		return fmt.Errorf("train: %s: intervention %s: %w", filepath.Join(t.o.Dir, runlog.InterventionsFile), all[i].ID, err)
	}
	t.plan = rewind.NewPlan(rewind.Effective(all))
	t.faults = faults.New(t.o.Debug, all)
	if err := t.plan.OnTrajectory(st); err != nil {
		return fmt.Errorf("train: resume: %w; move it out of checkpoints/ or rewind again", err)
	}
	return nil
}
