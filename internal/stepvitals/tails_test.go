package stepvitals

import (
	"math"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/runlog"
)

func TestStepTailsAndFractions(t *testing.T) {
	var tails Tails
	// 1..120 s: the window keeps the last 100 (21..120).
	var p50, p95 float64
	for i := 1; i <= 120; i++ {
		p50, p95 = tails.add(float64(i))
	}
	if p50 != 70 || p95 != 115 {
		t.Errorf("p50 %g, p95 %g over 21..120; want 70, 115", p50, p95)
	}
	var one Tails
	if p50, p95 := one.add(0.5); p50 != 0.5 || p95 != 0.5 {
		t.Errorf("one step: %g %g", p50, p95)
	}
	for _, tc := range []struct {
		name                      string
		m                         runlog.Step
		fwd, bwd, opt, comm, rest float64
		measured, hasComm         bool
	}{
		{"single process", runlog.Step{StepTime: 2, ForwardTime: 0.5, BackwardTime: 1, OptimizerTime: 0.2, DataWaitTime: 0.1}, 0.25, 0.5, 0.1, 0, 0.1, true, false},
		{"data parallel", runlog.Step{StepTime: 2, ForwardTime: 0.5, BackwardTime: 0.8, OptimizerTime: 0.2, PerLayer: map[string]float64{"allreduce_time": 0.4}}, 0.25, 0.4, 0.1, 0.2, 0.05, true, true},
		{"phases over the step time (clock skew): rest 0", runlog.Step{StepTime: 1, ForwardTime: 0.6, BackwardTime: 0.6}, 0.6, 0.6, 0, 0, 0, true, false},
		{"no step time", runlog.Step{ForwardTime: 1}, 0, 0, 0, 0, 0, false, false},
	} {
		var tl Tails
		m := tc.m
		tl.Fill(&m)
		v := m.Vitals
		near := func(a, b float64) bool { return math.Abs(a-b) < 1e-12 }
		if v.FracMeasured != tc.measured || !near(v.ForwardFrac, tc.fwd) || !near(v.BackwardFrac, tc.bwd) || !near(v.OptimizerFrac, tc.opt) || !near(v.OtherFrac, tc.rest) || (v.CommFrac != nil) != tc.hasComm {
			t.Errorf("%s: %+v", tc.name, v)
		}
		if tc.hasComm && !near(*v.CommFrac, tc.comm) {
			t.Errorf("%s: comm_frac %g, want %g", tc.name, *v.CommFrac, tc.comm)
		}
	}
}
