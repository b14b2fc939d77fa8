package run

import (
	"errors"
	"fmt"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/checkpoint"

	"github.com/kestrel-lm/kestrel/monitor"
)

// TestFinishCheckpointFailed: only a checkpoint that could not be saved
// (or a resume that found no valid checkpoint) is the SEV0
// checkpoint_failed; other errors that mention a checkpoint are not (a
// failed deletion of an old checkpoint used to stop the run with a SEV0).
func TestFinishCheckpointFailed(t *testing.T) {
	saveErr := &checkpoint.Error{Step: 40, Dir: "checkpoints/step-00000040", Err: errors.New("no space left on device")}
	for _, c := range []struct {
		name string
		err  error
		sev0 bool
	}{
		{"save failed", saveErr, true},
		{"save failed on ctrl-c", fmt.Errorf("interrupted at step 40, and the checkpoint failed: %w", saveErr), true},
		{"no valid checkpoint", fmt.Errorf("train: resume: %w", &checkpoint.Error{Dir: "checkpoints", Err: errors.New("no valid checkpoint to resume from")}), true},
		{"old keep-policy error", errors.New("checkpoint keep policy: unlinkat checkpoints/step-00000020: directory not empty"), false},
		{"observer error", errors.New("step 7: observer stopped the run (no checkpoint written; newest checkpoint (none)): boom"), false},
		{"no error", nil, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			ob, err := NewObserver(tinyRun(3), dir, quietLog(), nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := ob.Finish(c.err); got != c.err {
				t.Errorf("Finish returned %v, want %v", got, c.err)
			}
			var sev0 []string
			for _, a := range readAlerts(t, dir) {
				if a.Severity == monitor.SEV0 {
					sev0 = append(sev0, a.Rule)
				}
			}
			if want := c.sev0; (len(sev0) > 0) != want || (want && sev0[0] != monitor.RuleCheckpointFailed) {
				t.Errorf("SEV0 alerts %v, want checkpoint_failed: %v", sev0, want)
			}
		})
	}
}
