package train

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kestrel-lm/kestrel/internal/runlog"
)

// slowBetweenSteps sleeps in every evaluation's and checkpoint's observer
// call, as a slow sink or a slow disk would.
type slowBetweenSteps struct{ d time.Duration }

func (slowBetweenSteps) OnStep(*runlog.Step) error { return nil }
func (o slowBetweenSteps) OnEval(*runlog.Eval) error {
	time.Sleep(o.d)
	return nil
}
func (o slowBetweenSteps) OnCheckpoint(*runlog.Checkpoint) error {
	time.Sleep(o.d)
	return nil
}

// TestStepTimeExcludesEvalAndCheckpoint: the step after an evaluation and
// a checkpoint (each 0.3 s longer here) is timed like its neighbours:
// step_time, tokens_per_sec and cpu_time leave them out, and eval_time and
// checkpoint_time report them. On Linux every step line carries the
// contention witnesses.
func TestStepTimeExcludesEvalAndCheckpoint(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	o := baseOpts(dir)
	o.Train.Steps, o.Train.EvalEvery, o.Checkpoint.Every = 6, 3, 3
	const pause = 300 * time.Millisecond
	o.Observers = []Observer{slowBetweenSteps{pause}}
	if _, err := Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	lines := readLines(t, dir)
	if len(lines) != 6 {
		t.Fatalf("%d step lines", len(lines))
	}
	_, procStat := os.Stat("/proc/stat")
	for _, l := range lines {
		s := int(num(t, l, "step"))
		st, tps := num(t, l, "step_time"), num(t, l, "tokens_per_sec")
		if st <= 0 || st >= pause.Seconds() {
			t.Errorf("step %d: step_time %.3f s; the pause of %v between steps is not the step's", s, st, 2*pause)
		}
		if want := num(t, l, "tokens_per_update") / st; tps != want {
			t.Errorf("step %d: tokens_per_sec %g, want %g", s, tps, want)
		}
		evalT, ckT := num(t, l, "eval_time"), num(t, l, "checkpoint_time")
		if after := s == 4; after != (evalT > 0) || after != (ckT > 0) {
			t.Errorf("step %d: eval_time %g checkpoint_time %g; want both > 0 on the step after the evaluation and checkpoint of step 3 only", s, evalT, ckT)
		}
		if procStat == nil {
			if f := num(t, l, "cpu_steal_frac"); !(f >= 0 && f <= 1) {
				t.Errorf("step %d: cpu_steal_frac %g", s, f)
			}
			if n := num(t, l, "involuntary_ctx_switches"); n < 0 {
				t.Errorf("step %d: involuntary_ctx_switches %g", s, n)
			}
		}
	}
}
