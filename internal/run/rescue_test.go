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

// TestRollbackWindow: the skipped window starts at the earliest model alert
// within skip_window steps before the divergence and after the checkpoint;
// an injected fault is turned off only when the window holds it wholly.
func TestRollbackWindow(t *testing.T) {
	al := func(step int64, sev monitor.Severity, rule string) runlog.Alert {
		return runlog.Alert{Step: step, Severity: sev, Rule: rule}
	}
	for _, tc := range []struct {
		name           string
		alerts         []runlog.Alert
		ck, spike, win int
		want           int
	}{
		{"divergence only", []runlog.Alert{al(70, monitor.SEV0, monitor.RuleDivergence)}, 60, 70, 10, 70},
		{"SEV1 precursor", []runlog.Alert{al(66, monitor.SEV1, monitor.RuleLossSpike), al(70, monitor.SEV0, monitor.RuleDivergence)}, 60, 70, 10, 66},
		{"precursor before the checkpoint", []runlog.Alert{al(58, monitor.SEV1, monitor.RuleLossSpike)}, 60, 70, 20, 70},
		{"precursor out of the window", []runlog.Alert{al(62, monitor.SEV1, monitor.RuleLossSpike)}, 50, 80, 10, 80},
		{"infrastructure rule", []runlog.Alert{al(65, monitor.SEV1, monitor.RuleThroughputDrop)}, 60, 70, 10, 70},
		{"SEV2 is no precursor", []runlog.Alert{al(65, monitor.SEV2, monitor.RuleLossSpike)}, 60, 70, 10, 70},
	} {
		if got := precursor(tc.alerts, tc.ck, tc.spike, tc.win); got != tc.want {
			t.Errorf("%s: precursor %d, want %d", tc.name, got, tc.want)
		}
	}
	d := spikeRun(100).Debug // LR spike at 70 for 3 steps
	if got := clearedFaults(d, 70, 79); got["debug.lr_spike_at_step"] != "0" {
		t.Errorf("spike 70–72 in window 70–79: set %v, want it off", got)
	}
	for _, w := range [][2]int{{71, 80}, {70, 71}} {
		if got := clearedFaults(d, w[0], w[1]); got != nil {
			t.Errorf("spike 70–72, window %d–%d: set %v, want none (the spike reaches past it)", w[0], w[1], got)
		}
	}
	d.CorruptBatchAtStep = 75
	if got := clearedFaults(d, 72, 80); got["debug.corrupt_batch_at_step"] != "0" || len(got) != 1 {
		t.Errorf("corrupt batch at 75 in window 72–80: set %v", got)
	}
	for _, bad := range []func(*config.Config){
		func(c *config.Config) { c.Rescue.MaxRollbacks = -1 },
		func(c *config.Config) { c.Rescue.LRScale = 0 },
		func(c *config.Config) { c.Rescue.SkipWindow = -2 },
	} {
		cfg := spikeRun(10)
		bad(&cfg)
		if _, err := Train(context.Background(), cfg, t.TempDir(), Options{Logger: quietLog()}); err == nil || !strings.Contains(err.Error(), "rescue.") {
			t.Errorf("invalid [rescue] %+v: error %v, want one naming the field", cfg.Rescue, err)
		}
	}
}
