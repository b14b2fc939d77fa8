package drill

import (
	"context"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/config"
	"github.com/kestrel-lm/kestrel/internal/testrun"
)

// tiny is a small byte-level run of shakespeare, fast enough for a matrix.
func tiny() config.Config {
	cfg := testrun.Bytes()
	cfg.Train.BatchSize = 16
	cfg.Optim.Warmup = 20
	cfg.Monitor.KLSpikeMin = 100 // the tiny model's outputs move fast between early checkpoints
	return cfg
}

// TestDrillShort is the drill matrix that runs in make test: the one-off
// LR spike, the poisoned data window and the NaN at step 10 of a fresh run,
// 5 steps after a resume and just after a rollback, beside a healthy
// branch. Every fault must be seen within 3 steps, with no false alarm,
// the rescue must go back to a checkpoint from before the fault, and the
// spike and the window must end within 1% of the clean branch.
func TestDrillShort(t *testing.T) {
	rep, err := Run(context.Background(), Options{Config: tiny(), Steps: 60,
		Faults: []string{FaultLRSpike, FaultPoison, FaultNaN}, Moments: []string{MomentFresh, MomentResume, MomentRollback}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Rows) != 1+9 {
		t.Fatalf("%d rows, want the healthy branch and 9", len(rep.Rows))
	}
	for _, r := range rep.Rows {
		t.Logf("%-8s %-15s step %2d detected %-5v %s latency %d false %v last-good %d ok %v %s val %.4f clean %.4f (%+.2f%%)",
			r.Fault, r.Moment, r.FaultStep, r.Detected, r.Rule, r.Latency, r.FalseAlarms, r.LastGood, r.LastGoodOK, r.Outcome, r.FinalVal, r.CleanVal, r.DeltaPct)
		if r.Fault != "none" && (r.LastGood < 0 || r.Outcome != "rescued (rung 1)") {
			t.Errorf("%s@%s: outcome %q, last-good %d: want a rung-1 rescue", r.Fault, r.Moment, r.Outcome, r.LastGood)
		}
		if r.Fault != "none" && !r.Finished {
			t.Errorf("%s@%s: no final val loss", r.Fault, r.Moment)
		}
	}
	for _, f := range rep.Failures() {
		t.Error(f)
	}
}

// TestPlace: the moments land where the table says, and the ones a config
// cannot have are n/a with the reason.
func TestPlace(t *testing.T) {
	c := branchConfig(tiny(), 100)
	if c.Optim.Warmup != 20 || c.Checkpoint.Every != 5 || !c.Rescue.AutoRollback || len(c.Rescue.On) != 3 || c.Train.EvalEvery != 100 {
		t.Fatalf("branch config %+v", c)
	}
	for _, tc := range []struct {
		m    string
		want int
		na   bool
	}{{MomentFresh, 10, false}, {MomentWarmup, 10, false}, {MomentResume, 45, false}, {MomentRollback, 32, false}, {MomentCooldown, 90, false}, {MomentStage, 0, true}} {
		cc := c
		mo := place(&cc, tc.m, FaultPoison)
		if (mo.na != "") != tc.na || mo.step != tc.want {
			t.Errorf("%s: %+v, want step %d (n/a %v)", tc.m, mo, tc.want, tc.na)
		}
	}
	if _, err := Run(context.Background(), Options{Config: tiny(), Faults: []string{"meteor"}}); err == nil {
		t.Error("unknown fault accepted")
	}
	if _, err := Run(context.Background(), Options{Config: tiny(), Steps: 10}); err == nil {
		t.Error("--steps 10 accepted")
	}
}

// TestDrillStall: the stall is sized from the healthy branch's step time
// and seen by the stall watchdog at its step.
func TestDrillStall(t *testing.T) {
	rep, err := Run(context.Background(), Options{Config: tiny(), Steps: 40, Faults: []string{FaultStall}, Moments: []string{MomentFresh}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Rows) != 2 {
		t.Fatalf("%d rows, want the clean branch and the stall", len(rep.Rows))
	}
	r := rep.Rows[1]
	if !r.Detected || r.Rule != "stalled" || r.Latency != 0 || r.Outcome != "ran through" {
		t.Errorf("stall row %+v: want a SEV1 stalled at its step, and the run through", r)
	}
	for _, f := range rep.Failures() {
		t.Error(f)
	}
}
