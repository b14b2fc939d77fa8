package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/checkpoint"
)

// TestCheckpointsCLI: kestrel checkpoints lists a monitored run's
// checkpoints newest first with their health and marks the last-good one;
// --json prints one object per checkpoint; a missing run is an error.
func TestCheckpointsCLI(t *testing.T) {
	cfg := tinyByteConfig(6)
	cfg.Train.EvalEvery = 4
	cfg.Checkpoint.Every, cfg.Checkpoint.Keep = 2, 5
	runDir := trainTiny(t, cfg)

	execute := func(args ...string) (string, error) {
		var out strings.Builder
		cmd := newCheckpointsCmd()
		cmd.SetOut(&out)
		cmd.SetErr(&strings.Builder{})
		cmd.SetArgs(args)
		err := cmd.Execute()
		return out.String(), err
	}
	out, err := execute(runDir)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 5 || !strings.Contains(lines[0], "step") || !strings.Contains(lines[0], "health") {
		t.Fatalf("output:\n%s\nwant a header, 3 checkpoints and the last-good note", out)
	}
	if f := strings.Fields(lines[1]); len(f) < 9 || f[0] != "*" || f[1] != "6" || f[3] != "final" || f[len(f)-1] != "confirmed" {
		t.Errorf("newest row %q: want * 6 … final … confirmed (the end of the run confirms the final checkpoint)", lines[1])
	}
	if f := strings.Fields(lines[3]); len(f) < 8 || f[0] != "2" || f[3] != "-" || f[len(f)-1] != "confirmed" {
		t.Errorf("oldest row %q: want step 2, no val loss yet, confirmed", lines[3])
	}
	if !strings.HasPrefix(lines[4], "* last-good") {
		t.Errorf("last line %q, want the last-good note", lines[4])
	}

	out, err = execute("--json", runDir)
	if err != nil {
		t.Fatal(err)
	}
	var steps []int
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var c checkpoint.Info
		if err := json.Unmarshal([]byte(line), &c); err != nil {
			t.Fatalf("--json line %q: %v", line, err)
		}
		steps = append(steps, c.Step)
		if c.Health == nil || c.Health.Status != checkpoint.HealthHealthy || c.Status != checkpoint.Confirmed || c.Bytes == 0 {
			t.Errorf("--json step %d: %+v", c.Step, c)
		}
		if c.LastGood != (c.Step == 6) {
			t.Errorf("--json step %d: last_good = %v", c.Step, c.LastGood)
		}
	}
	if len(steps) != 3 || steps[0] != 6 || steps[2] != 2 {
		t.Errorf("--json steps %v, want [6 4 2]", steps)
	}

	if _, err := execute(filepath.Join(runDir, "nope")); err == nil {
		t.Error("missing run directory: want an error")
	}
}
