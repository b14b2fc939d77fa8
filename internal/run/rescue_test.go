package run

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/rewind"

	"github.com/kestrel-lm/kestrel/internal/checkpoint"

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

// TestRescueLadder: the ladder acts on the incidents rescue.on names and
// never turns a fault off. A one-off LR spike (early in a fresh run, or
// mid-run) is rescued on rung 1 and the run ends near the clean one; a
// persistent LR fault climbs to rung 2 (lower LR for the rest of the run,
// tighter update clipping) and stops on rung 3 with a rescue summary when
// it still diverges; a poisoned data window is rescued by skipping it
// when data_event is on, and runs through when it is not; with the ladder
// off, or max_rollbacks spent, the run stops on the SEV0 as before.
func TestRescueLadder(t *testing.T) {
	const steps = 120
	clean := spikeRun(steps)
	clean.Debug.LRSpikeAtStep = 0
	cres, err := Train(context.Background(), clean, t.TempDir(), Options{Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		set     func(c *config.Config)
		rungs   []int  // the rungs of the automatic rollbacks taken
		errWant string // "" = the run finishes near the clean one
	}{
		{"one-off spike", func(c *config.Config) {}, []int{1}, ""},
		{"one-off spike at step 12", func(c *config.Config) {
			c.Debug.LRSpikeAtStep, c.Checkpoint.Every = 12, 5
		}, []int{1}, ""},
		{"off", func(c *config.Config) { c.Rescue.AutoRollback = false }, nil, "monitor paused the run"},
		{"max0", func(c *config.Config) { c.Rescue.MaxRollbacks = 0 }, nil, "rescue.max_rollbacks = 0 reached (0 taken"},
		{"persistent LR ×1000", func(c *config.Config) {
			c.Debug.LRSpikeAtStep, c.Debug.LRHighFromStep, c.Debug.LRHighFactor = 0, 70, 1000
		}, []int{1, 2}, "rung 3"},
		{"poisoned window, data_event on", func(c *config.Config) {
			c.Debug.LRSpikeAtStep, c.Debug.PoisonDataAtStep, c.Debug.PoisonDataSteps = 0, 70, 5
			c.Rescue.On = append(c.Rescue.On, "data_event")
		}, []int{1}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := spikeRun(steps)
			cfg.Rescue.AutoRollback = true
			tc.set(&cfg)
			res, err := Train(context.Background(), cfg, dir, Options{Logger: quietLog()})
			ivs, rerr := runlog.ReadInterventions(dir)
			if rerr != nil {
				t.Fatal(rerr)
			}
			var rungs []int
			for _, iv := range ivs {
				rungs = append(rungs, iv.Rung)
				if iv.By != ByAuto || !strings.HasPrefix(iv.Reason, "auto rollback (rescue ladder rung") {
					t.Errorf("intervention %+v, want by auto", iv)
				}
				for k := range iv.Set {
					if strings.HasPrefix(k, "debug.") {
						t.Errorf("intervention %s sets %s: a rescue must not switch a fault off", iv.ID, k)
					}
				}
				if iv.Rung == 2 && (iv.LRSteps != 0 || iv.LRScale != cfg.Rescue.Rung2LRScale || iv.Set["optim.clip_update_norm"] != "true") {
					t.Errorf("rung 2 %+v: want LR ×%g for the rest of the run and update clipping on", iv, cfg.Rescue.Rung2LRScale)
				}
			}
			if fmt.Sprint(rungs) != fmt.Sprint(tc.rungs) {
				t.Fatalf("rungs %v (%+v), want %v (err %v)", rungs, ivs, tc.rungs, err)
			}
			if tc.errWant != "" {
				t.Logf("error: %v", err)
				if err == nil || !strings.Contains(err.Error(), tc.errWant) {
					t.Fatalf("error %v, want %q", err, tc.errWant)
				}
				if tc.errWant == "rung 3" {
					// Across the repeated rollbacks the keep policy (keep 2)
					// left a confirmed checkpoint from before the fault.
					if ck, err := checkpoint.LastGoodBefore(dir, 70); err != nil {
						t.Errorf("after rung 3: %v", err)
					} else {
						t.Logf("confirmed checkpoint before the fault kept: %s", ck)
					}
					m, _ := filepath.Glob(filepath.Join(dir, "incidents", "*", "RESCUE.md"))
					if len(m) == 0 {
						t.Fatalf("no RESCUE.md in an incident bundle after rung 3")
					}
					b, _ := os.ReadFile(m[0])
					if !strings.Contains(string(b), "rung 2") {
						t.Errorf("rescue summary does not list what was tried:\n%s", b)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("Train: %v", err)
			}
			if res.Step != steps {
				t.Fatalf("trained to step %d, want %d", res.Step, steps)
			}
			// The checkpoint rolled back to was really good: before the fault.
			for _, iv := range ivs {
				fault := max(cfg.Debug.LRSpikeAtStep, cfg.Debug.PoisonDataAtStep)
				if iv.ToStep >= fault || iv.SkipFrom > fault || iv.SkipTo < fault {
					t.Errorf("%s: back to step %d, skipping %d-%d; the fault is at step %d", iv.ID, iv.ToStep, iv.SkipFrom, iv.SkipTo, fault)
				}
			}
			if d := math.Abs(res.ValLoss-cres.ValLoss) / cres.ValLoss; d > 0.01 {
				t.Errorf("val loss %.4f vs clean %.4f: %.1f%% apart, want within 1%%", res.ValLoss, cres.ValLoss, 100*d)
			}
			t.Logf("rescued val loss %.4f, clean %.4f; %s", res.ValLoss, cres.ValLoss, ivs[0].Summary())
		})
	}
}

// TestRollbackWindow: the skipped window starts at the earliest model alert
// within skip_window steps before the divergence and after the checkpoint.
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
	for _, bad := range []func(*config.Config){
		func(c *config.Config) { c.Rescue.MaxRollbacks = -1 },
		func(c *config.Config) { c.Rescue.LRScale = 0 },
		func(c *config.Config) { c.Rescue.SkipWindow = -2 },
		func(c *config.Config) { c.Rescue.On = []string{"divergance"} },
		func(c *config.Config) { c.Rescue.Rung2LRScale = 2 },
	} {
		cfg := spikeRun(10)
		bad(&cfg)
		if _, err := Train(context.Background(), cfg, t.TempDir(), Options{Logger: quietLog()}); err == nil || !strings.Contains(err.Error(), "rescue.") {
			t.Errorf("invalid [rescue] %+v: error %v, want one naming the field", cfg.Rescue, err)
		}
	}
}

// TestLastGoodIsConfirmed: an LR ×1000 update at step 15 with checkpoints
// every 5. Checkpoint 15 holds the bad update; it must never become
// last-good, whether the monitor sees the update (an open incident when it
// is written) or is made blind to it (then its own probe, far above the
// probe of checkpoint 10, rejects it at the next checkpoint). last-good,
// rewind's target, is before the spike, and so is the rescue's.
func TestLastGoodIsConfirmed(t *testing.T) {
	for _, blind := range []bool{false, true} {
		t.Run(fmt.Sprintf("blind=%v", blind), func(t *testing.T) {
			dir := t.TempDir()
			cfg := tinyRun(30)
			cfg.Train.EvalEvery, cfg.Train.ProbeSequences = 30, 4
			cfg.Checkpoint.Every, cfg.Checkpoint.Keep = 5, 10
			cfg.Monitor.PauseOnSEV0 = false
			cfg.Debug.LRSpikeAtStep, cfg.Debug.LRSpikeFactor, cfg.Debug.LRSpikeSteps = 15, 1000, 1
			if blind {
				cfg.Monitor.DivergenceUpdateAbs, cfg.Monitor.DivergenceUpdateFactor, cfg.Monitor.DivergenceLossMargin = 1e9, 1e9, 1e9
				cfg.Monitor.DivergenceLossFactor, cfg.Monitor.SpikeZ, cfg.Monitor.KLSpikeFactor, cfg.Monitor.KLSpikeMin = 1e9, 1e9, 1e9, 1e9
			}
			if _, err := Train(context.Background(), cfg, dir, Options{Logger: quietLog()}); err != nil {
				t.Fatal(err)
			}
			list, err := checkpoint.List(dir)
			if err != nil {
				t.Fatal(err)
			}
			status := map[int]string{}
			for _, c := range list {
				status[c.Step] = c.Status
				if c.LastGood && c.Step >= 15 {
					t.Errorf("last-good is checkpoint %d, which holds the bad update of step 15", c.Step)
				}
			}
			t.Logf("statuses %v", status)
			if status[15] == checkpoint.Confirmed || status[15] == checkpoint.StatusPending {
				t.Errorf("checkpoint 15 is %s, want rejected or unhealthy", status[15])
			}
			if status[5] != checkpoint.Confirmed {
				t.Errorf("checkpoint 5 is %s, want confirmed", status[5])
			}
			got, err := checkpoint.Resolve(dir, "last-good")
			if err != nil {
				t.Fatal(err)
			}
			if l, err := checkpoint.Load(got); err != nil || l.State.Step >= 15 {
				t.Fatalf("last-good = %s (%v), want a checkpoint before step 15", got, err)
			}
		})
	}
}

// TestDetectAfterResume: the run stops at step 40 and resumes; an LR ×1000
// spike 5 steps after the resume is a SEV0 within 3 steps, and the
// healthy steps before it raise no SEV0/SEV1 (the windows seeded from
// metrics.jsonl hold the run's own history).
func TestDetectAfterResume(t *testing.T) {
	dir := t.TempDir()
	cfg := tinyRun(40)
	cfg.Train.EvalEvery, cfg.Checkpoint.Every = 20, 10
	if _, err := Train(context.Background(), cfg, dir, Options{Logger: quietLog()}); err != nil {
		t.Fatal(err)
	}
	cfg.Train.Steps = 60
	cfg.Debug.LRSpikeAtStep, cfg.Debug.LRSpikeFactor, cfg.Debug.LRSpikeSteps = 45, 1000, 3
	_, err := Train(context.Background(), cfg, dir, Options{Logger: quietLog()})
	if err == nil || !strings.Contains(err.Error(), "SEV0 divergence") {
		t.Fatalf("resumed run: %v, want it stopped on the SEV0 divergence", err)
	}
	for _, a := range readAlerts(t, dir) {
		if !modelAlert(a) {
			continue // the machine's and the records' rules (a loaded test machine, the changed config)
		}
		if a.Step < 45 {
			t.Errorf("false alarm before the spike: %s %s at step %d: %s", a.Severity, a.Rule, a.Step, a.Message)
		}
		if a.Rule == monitor.RuleDivergence && a.Step > 48 {
			t.Errorf("divergence at step %d, more than 3 steps after the spike at 45", a.Step)
		}
	}
}

// TestRungOf: the ladder climbs only when the same trigger comes back
// within recur_steps after the last automatic rollback's window.
func TestRungOf(t *testing.T) {
	rc := rewind.DefaultRescueConfig()
	prev := []runlog.Intervention{{ID: "rewind-1", ToStep: 60, SkipFrom: 70, SkipTo: 79, Rung: 1, Trigger: "divergence", By: ByAuto}}
	for _, tc := range []struct {
		name string
		done []runlog.Intervention
		on   string
		step int64
		want int
	}{
		{"first", nil, "divergence", 70, 1},
		{"same trigger soon", prev, "divergence", 85, 2},
		{"same trigger at the window's end + recur_steps", prev, "divergence", 79 + int64(rc.RecurSteps), 2},
		{"same trigger later", prev, "divergence", 80 + int64(rc.RecurSteps), 1},
		{"another trigger", prev, "data_event", 85, 1},
		{"after rung 2", []runlog.Intervention{{ToStep: 60, SkipTo: 79, Rung: 2, Trigger: "nan_inf"}}, "nan_inf", 90, 3},
	} {
		if got := rungOf(tc.done, tc.on, runlog.Alert{Step: tc.step}, rc); got != tc.want {
			t.Errorf("%s: rung %d, want %d", tc.name, got, tc.want)
		}
	}
}
