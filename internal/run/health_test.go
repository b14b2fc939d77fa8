package run

import (
	"strconv"
	"strings"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/checkpoint"

	"github.com/kestrel-lm/kestrel/internal/runlog"
	"github.com/kestrel-lm/kestrel/monitor"
)

// TestLastGoodSurvivesLRBlowUp is issue 15's case: checkpoint.every = 2,
// keep = 2, the LR ×1000 at step 70 of a 100-step run. With the monitor's
// pause off the run goes on to step 100 and writes checkpoints 70 … 100,
// all broken; with the pause on the divergence SEV0 stops it. Either way a
// checkpoint stamped healthy from before step 70 survives and last-good
// names it; a clean run's newest checkpoint is healthy.
func TestLastGoodSurvivesLRBlowUp(t *testing.T) {
	for _, c := range []struct {
		name         string
		spike, pause bool
	}{
		{"clean", false, false},
		{"spike, pause off", true, false},
		{"spike, pause on", true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := tinyRun(100)
			cfg.Checkpoint.Every, cfg.Checkpoint.Keep = 2, 2
			cfg.Monitor.PauseOnSEV0 = c.pause
			if c.spike {
				cfg.Debug.LRSpikeAtStep, cfg.Debug.LRSpikeFactor, cfg.Debug.LRSpikeSteps = 70, 1000, 3
			}
			res, err := runMonitored(t, cfg, dir)
			switch {
			case c.pause && (err == nil || !strings.Contains(err.Error(), monitor.RuleDivergence)):
				t.Fatalf("run error %v, want the divergence pause", err)
			case !c.pause && err != nil:
				t.Fatal(err)
			}
			list, err := checkpoint.List(dir)
			if err != nil {
				t.Fatal(err)
			}
			var rows []string
			for _, ck := range list {
				rows = append(rows, checkpoint.Name(ck.Step)+" "+ck.Health.Summary())
			}
			if res != nil {
				t.Logf("stopped at step %d", res.Step)
			}
			t.Logf("checkpoints:\n%s", strings.Join(rows, "\n"))
			good, err := checkpoint.LastGood(dir)
			if err != nil {
				t.Fatal(err)
			}
			if !c.spike {
				if good.Step != 100 {
					t.Errorf("clean run: last-good at step %d, want the final checkpoint 100", good.Step)
				}
				return
			}
			if good.Step >= 70 {
				t.Errorf("last-good at step %d, want one from before the blow-up at 70", good.Step)
			}
			if err := checkpoint.Verify(good.Dir); err != nil {
				t.Errorf("last-good checkpoint damaged: %v", err)
			}
			if dir2, err := checkpoint.Resolve(dir, "last-good"); err != nil || dir2 != good.Dir {
				t.Errorf("ResolveCheckpoint(last-good) = %s, %v; want %s", dir2, err, good.Dir)
			}
			for _, ck := range list {
				if ck.Step >= 70 && ck.Health.Status != checkpoint.HealthUnhealthy {
					t.Errorf("checkpoint %d after the blow-up is %s, want unhealthy", ck.Step, ck.Health.Summary())
				}
			}
			if !c.pause {
				if list[0].Step != 100 {
					t.Errorf("pause off: newest checkpoint %d, want 100", list[0].Step)
				}
				return
			}
			// Resume from the last good checkpoint without the spike: the
			// divergence of the abandoned steps (alerts.jsonl) does not
			// taint the new checkpoints.
			cfg.Debug.LRSpikeAtStep = 0
			if _, err := runMonitored(t, cfg, dir); err != nil {
				t.Fatal(err)
			}
			if good, err := checkpoint.LastGood(dir); err != nil || good.Step != 100 {
				t.Errorf("resumed without the spike: last-good %+v, %v; want the final checkpoint 100", good, err)
			}
		})
	}
}

// TestOpenIncidents: which alerts are open at a checkpoint's step.
func TestOpenIncidents(t *testing.T) {
	al := func(step int64, sev runlog.Severity, rule string) runlog.Alert {
		return runlog.Alert{Step: step, Severity: sev, Rule: rule}
	}
	for _, c := range []struct {
		name   string
		alerts []runlog.Alert
		step   int64
		want   string // rule@step[xcount] …
	}{
		{"none", nil, 50, ""},
		{"SEV2 only", []runlog.Alert{al(40, runlog.SEV2, monitor.RuleValRegression)}, 50, ""},
		{"infra SEV1 ignored", []runlog.Alert{al(40, runlog.SEV1, monitor.RuleThroughputDrop), al(41, runlog.SEV1, monitor.RuleStalled)}, 50, ""},
		{"a memory leak is no model incident", []runlog.Alert{al(40, runlog.SEV1, monitor.RuleMemoryCreep)}, 50, ""},
		{"non-finite optimizer state is", []runlog.Alert{al(40, runlog.SEV0, monitor.RuleOptStateNonFin)}, 50, "opt_state_nonfinite@40x1"},
		{"open spike", []runlog.Alert{al(40, runlog.SEV1, monitor.RuleLossSpike)}, 50, "loss_spike@40x1"},
		{"spike closed by a recoverable verdict", []runlog.Alert{al(40, runlog.SEV1, monitor.RuleLossSpike), al(40, runlog.SEV2, monitor.RuleSpikeVerdict)}, 50, ""},
		{"clean window passed", []runlog.Alert{al(40, runlog.SEV0, monitor.RuleDivergence)}, 72, ""},
		{"one step short of clean", []runlog.Alert{al(40, runlog.SEV0, monitor.RuleDivergence)}, 71, "divergence@40x1"},
		{"alert after the step not seen", []runlog.Alert{al(60, runlog.SEV0, monitor.RuleDivergence)}, 50, ""},
		{"episode chains, old episode closed", []runlog.Alert{
			al(10, runlog.SEV1, monitor.RuleLossSpike),
			al(70, runlog.SEV1, monitor.RuleLossSpike), al(71, runlog.SEV0, monitor.RuleDivergence),
			al(72, runlog.SEV0, monitor.RuleDivergence), al(100, runlog.SEV1, monitor.RuleSpikeVerdict),
		}, 120, "loss_spike@70x1 divergence@71x2 loss_spike_verdict@100x1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var got []string
			for _, in := range openIncidents(c.alerts, c.step, 32) {
				got = append(got, in.Rule+"@"+strconv.Itoa(in.Step)+"x"+strconv.Itoa(in.Count))
			}
			if g := strings.Join(got, " "); g != c.want {
				t.Errorf("open at %d = %q, want %q", c.step, g, c.want)
			}
		})
	}
	for _, c := range []struct{ window, cooldown, want int }{{64, 50, 64}, {32, 50, 51}} {
		if got := newHealthTrack(monitor.Config{Window: c.window, Cooldown: c.cooldown}).clean; got != c.want {
			t.Errorf("window %d, cooldown %d: clean window %d, want %d (outlasting the cooldown)", c.window, c.cooldown, got, c.want)
		}
	}
	var nilObs Observer
	if _, ok := nilObs.CheckpointHealth(10); ok {
		t.Error("monitor off: CheckpointHealth ok, want unknown")
	}
}

// TestHealthHistory: alerts of earlier invocations count after a resume,
// but those of an abandoned trajectory (steps at or after the step training
// restarted from, in alerts.jsonl or fired before an in-process rewind) do
// not, and neither do its losses.
func TestHealthHistory(t *testing.T) {
	al := func(step int64, rule string) runlog.Alert {
		return runlog.Alert{Step: step, Severity: runlog.SEV0, Rule: rule}
	}
	h := newHealthTrack(monitor.Config{Window: 32, SpikeZ: 6})
	h.prior = []runlog.Alert{al(50, monitor.RuleDivergence), al(90, monitor.RuleSkipStorm)} // alerts.jsonl: 90 was after the resumed checkpoint
	var cur []runlog.Alert
	alerts := func() []runlog.Alert { return cur }
	open := func(step int64) string {
		var s []string
		for _, in := range openIncidents(h.alerts(cur), step, 32) {
			s = append(s, in.Rule+"@"+strconv.Itoa(in.Step))
		}
		return strings.Join(s, " ")
	}
	step := func(s int, loss float64) {
		h.observe(&runlog.Step{Step: s, TrainLossRaw: loss, TrainLossEMA: loss}, alerts)
	}
	for s := 61; s <= 70; s++ {
		step(s, 3)
	}
	if got := open(70); got != "divergence@50" {
		t.Errorf("after resume at 61: open %q, want divergence@50 (skip_storm@90 belongs to the abandoned run)", got)
	}
	for s := 71; s <= 80; s++ {
		step(s, 30)
		if s == 75 {
			cur = append(cur, al(75, monitor.RuleLossSpike))
		}
	}
	if got := open(80); got != "divergence@50 loss_spike@75" {
		t.Errorf("at 80: open %q", got)
	}
	step(72, 3) // rewind: steps 72… again
	if got := open(72); got != "divergence@50" {
		t.Errorf("after a rewind to 72: open %q, want divergence@50 (loss_spike@75 was abandoned)", got)
	}
	for _, l := range h.losses {
		if l.loss == 30 && l.step >= 72 {
			t.Errorf("loss of abandoned step %d kept", l.step)
		}
	}
	cur = append(cur, al(73, monitor.RuleDivergence))
	if in := openIncidents(h.alerts(cur), 73, 32); len(in) != 1 || in[0].Step != 50 || in[0].Count != 2 || in[0].LastStep != 73 {
		t.Errorf("incidents %+v, want divergence first at 50, fired twice, last at 73", in)
	}
}
