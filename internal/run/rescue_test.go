package run

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/config"
	"github.com/kestrel-lm/kestrel/internal/runlog"
	"github.com/kestrel-lm/kestrel/monitor"
)

// spikeRun is tinyRun with an LR ×1000 at step 70 (TestTrainLRSpikeX1000IsSEV0).
func spikeRun(steps int) config.Config {
	cfg := tinyRun(steps)
	cfg.Train.BatchSize = 16
	cfg.Train.EvalEvery = steps
	cfg.Checkpoint.Every = 10
	cfg.Debug.LRSpikeAtStep, cfg.Debug.LRSpikeFactor, cfg.Debug.LRSpikeSteps = 70, 1000, 3
	return cfg
}

// TestAutoRollback: with [rescue] auto_rollback a SEV0 divergence rolls the
// run back to its last-good checkpoint, skips the spike's window and
// trains on to the end, ending near the clean run; without it, or with
// max_rollbacks spent, the run stops on the SEV0 as before; a spike the
// skip window does not clear stops after max_rollbacks with a clear error.
func TestAutoRollback(t *testing.T) {
	const steps = 120
	clean := spikeRun(steps)
	clean.Debug.LRSpikeAtStep = 0
	cres, err := Train(context.Background(), clean, t.TempDir(), Options{Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		auto      bool
		max       int
		spikeLen  int
		ckEvery   int
		rollbacks int
		errWant   string // "" = the run finishes
	}{
		{"on", true, 2, 3, 10, 1, ""},
		{"off", false, 2, 3, 10, 0, "monitor paused the run"},
		{"max0", true, 0, 3, 10, 0, "rescue.max_rollbacks = 0 reached (0 taken"},
		// The spike lasts 40 steps: the 10-step window does not clear it.
		// Checkpoints every 20 steps: a resumed trajectory's monitor starts
		// with empty windows and sees the recurrence some steps late (see
		// docs/rescue.md), after a checkpoint at 70 would have been written.
		{"recurring", true, 2, 40, 20, 2, "rescue.max_rollbacks = 2 reached (2 taken"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := spikeRun(steps)
			cfg.Debug.LRSpikeSteps, cfg.Checkpoint.Every = tc.spikeLen, tc.ckEvery
			cfg.Rescue.AutoRollback, cfg.Rescue.MaxRollbacks = tc.auto, tc.max
			res, err := Train(context.Background(), cfg, dir, Options{Logger: quietLog()})
			ivs, rerr := runlog.ReadInterventions(dir)
			if rerr != nil {
				t.Fatal(rerr)
			}
			if len(ivs) != tc.rollbacks {
				t.Fatalf("%d interventions %+v, want %d", len(ivs), ivs, tc.rollbacks)
			}
			for _, iv := range ivs {
				if iv.By != ByAuto || !strings.HasPrefix(iv.Reason, "auto rollback: ") || iv.ToStep != 60 || iv.SkipFrom < 61 || iv.SkipFrom > 75 || iv.SkipTo != iv.SkipFrom+9 && iv.SkipTo < 79 {
					t.Errorf("intervention %+v, want by auto, back to step 60, skipping from the spike", iv)
				}
			}
			if tc.errWant != "" {
				t.Logf("error: %v", err)
				if err == nil || !strings.Contains(err.Error(), tc.errWant) || !strings.Contains(err.Error(), monitor.RuleDivergence) {
					t.Fatalf("error %v, want %q naming the divergence", err, tc.errWant)
				}
				return
			}
			if err != nil {
				t.Fatalf("Train: %v", err)
			}
			if res.Step != steps {
				t.Fatalf("trained to step %d, want %d", res.Step, steps)
			}
			if iv := ivs[0]; iv.Set["debug.lr_spike_at_step"] != "0" {
				t.Errorf("set %v: the injected spike inside the skipped window should be turned off", iv.Set)
			}
			if d := math.Abs(res.ValLoss-cres.ValLoss) / cres.ValLoss; d > 0.03 {
				t.Errorf("val loss %.4f vs clean %.4f: %.1f%% apart, want within 3%%", res.ValLoss, cres.ValLoss, 100*d)
			}
			t.Logf("rescued val loss %.4f, clean %.4f; %s", res.ValLoss, cres.ValLoss, ivs[0].Summary())
		})
	}
}
