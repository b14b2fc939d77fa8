package train

import (
	"context"
	"os"
	"path/filepath"
	"strings"
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

func TestParseProcStatCPU(t *testing.T) {
	for _, c := range []struct {
		in           string
		steal, total uint64
		err          string
	}{
		{"cpu  10 2 30 400 5 6 7 8 9 10\ncpu0 1 2 3 4 5 6 7 8 0 0\n", 8, 468, ""},
		{"cpu 1 2 3 4 5 6 7 0", 0, 28, ""},
		{"cpu0 1 2 3 4 5 6 7 8\n", 0, 0, "not the aggregate cpu line"},
		{"cpu 1 2 3 4 5 6 7\n", 0, 0, "7 values"},
		{"cpu 1 2 x 4 5 6 7 8\n", 0, 0, "value 3"},
		{"cpu 18446744073709551615 1 0 0 0 0 0 0\n", 0, 0, "overflows"},
		{"", 0, 0, "not the aggregate"},
	} {
		st, tot, err := parseProcStatCPU([]byte(c.in))
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: error %v, want one containing %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || st != c.steal || tot != c.total {
			t.Errorf("%q: %d %d %v, want %d %d", c.in, st, tot, err, c.steal, c.total)
		}
	}
}

func FuzzParseProcStatCPU(f *testing.F) {
	f.Add([]byte("cpu  10 2 30 400 5 6 7 8 9 10\ncpu0 1 2 3 4 5 6 7 8 0 0\n"))
	f.Add([]byte("cpu 1 2 3\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		st, tot, err := parseProcStatCPU(b)
		if err == nil && st > tot {
			t.Fatalf("steal %d above the total %d", st, tot)
		}
	})
}

func TestParseSchedstat(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		ok   bool
	}{{"1234 5678 9\n", 5678, true}, {"1 0 0", 0, true}, {"12", 0, false}, {"", 0, false}, {"1 -3 2", 0, false}, {"1 x 2", 0, false}} {
		got, ok := parseSchedstat([]byte(tc.in))
		if got != tc.want || ok != tc.ok {
			t.Errorf("parseSchedstat(%q) = %d, %v; want %d, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
	if ns, ok := readRunDelay(); ok && ns < 0 {
		t.Errorf("run delay %d ns", ns)
	}
}

// BenchmarkReadHostCounters is the per-step cost of the contention
// witnesses (/proc/stat, getrusage, every thread's schedstat), read twice
// per step line.
func BenchmarkReadHostCounters(b *testing.B) {
	for b.Loop() {
		readHostCounters()
	}
}
