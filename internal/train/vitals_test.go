package train

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/checkpoint"
	"github.com/kestrel-lm/kestrel/internal/runlog"
	"github.com/kestrel-lm/kestrel/monitor"
)

// monitorObserver feeds a monitor as internal/run's observer does (the
// step and checkpoint values), and calls every checkpoint healthy, so
// that a checkpoint could become last-good.
type monitorObserver struct {
	m      *monitor.Monitor
	alerts []monitor.Alert
}

func (o *monitorObserver) OnStep(s *runlog.Step) error {
	o.alerts = append(o.alerts, o.m.Observe(monitor.Sample{Step: int64(s.Step), Tokens: s.TokensSeen, Values: runlog.Values(s, nil)})...)
	return nil
}
func (o *monitorObserver) OnEval(*runlog.Eval) error { return nil }
func (o *monitorObserver) OnCheckpoint(ev *runlog.Checkpoint) error {
	o.alerts = append(o.alerts, o.m.Record(monitor.Event{Kind: monitor.EventCheckpoint, Step: int64(ev.Step), Tokens: ev.TokensSeen, OK: true, Path: ev.Dir, Values: runlog.Values(ev, nil)})...)
	return nil
}
func (o *monitorObserver) CheckpointHealth(int) (checkpoint.Health, bool) {
	return checkpoint.Health{Status: checkpoint.HealthHealthy}, true
}

func (o *monitorObserver) fired(rule string) []monitor.Alert {
	var out []monitor.Alert
	for _, a := range o.alerts {
		if a.Rule == rule {
			out = append(out, a)
		}
	}
	return out
}

func newMonitorObserver(t *testing.T, set func(c *monitor.Config)) *monitorObserver {
	t.Helper()
	c := monitor.DefaultConfig()
	c.SQLite, c.TensorBoard, c.PauseOnSEV0 = false, false, false
	if set != nil {
		set(&c)
	}
	m, err := monitor.New(c, monitor.Options{RunDir: t.TempDir(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return &monitorObserver{m: m}
}

func lineNum(t *testing.T, line map[string]json.RawMessage, k string) float64 {
	t.Helper()
	raw, ok := line[k]
	if !ok {
		t.Fatalf("step %s: no %s", line["step"], k)
	}
	var v float64
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("%s = %s: %v", k, raw, err)
	}
	return v
}

// TestStepVitalsLine: every step line carries the memory, the step-time
// tails and fractions, lm_head_norm and opt_state_finite, from the first
// step; the result carries the peak RSS.
func TestStepVitalsLine(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	o := baseOpts(dir)
	o.Train.Steps = 6
	runtime.GC() // go_heap_bytes is the live heap of the last GC: left out before the first
	res, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	var peak float64
	for i, l := range readLines(t, dir) {
		if runtime.GOOS == "linux" {
			rss, file := lineNum(t, l, "rss_bytes"), lineNum(t, l, "rss_file_bytes")
			if !(rss > 1<<20) || !(file >= 0 && file < rss) {
				t.Errorf("step %d: rss_bytes %g, rss_file_bytes %g", i+1, rss, file)
			}
			peak = math.Max(peak, rss)
		}
		if h := lineNum(t, l, "go_heap_bytes"); !(h > 0) {
			t.Errorf("step %d: go_heap_bytes %g", i+1, h)
		}
		p50, p95 := lineNum(t, l, "step_time_p50"), lineNum(t, l, "step_time_p95")
		if !(p50 > 0 && p50 <= p95) {
			t.Errorf("step %d: p50 %g, p95 %g", i+1, p50, p95)
		}
		sum := lineNum(t, l, "dataloader_stall_frac")
		for _, k := range []string{"forward_frac", "backward_frac", "optimizer_frac", "other_frac"} {
			f := lineNum(t, l, k)
			if !(f >= 0 && f <= 1) {
				t.Errorf("step %d: %s = %g", i+1, k, f)
			}
			sum += f
		}
		if math.Abs(sum-1) > 1e-6 {
			t.Errorf("step %d: the fractions sum to %g", i+1, sum)
		}
		if _, ok := l["comm_frac"]; ok {
			t.Errorf("step %d: comm_frac in a single process", i+1)
		}
		if string(l["skipped"]) == "true" { // the optimizer takes no sums of a skipped step
			if _, ok := l["lm_head_norm"]; ok {
				t.Errorf("step %d: lm_head_norm on a skipped step", i+1)
			}
		} else if n := lineNum(t, l, "lm_head_norm"); !(n > 0) {
			t.Errorf("step %d: lm_head_norm %g", i+1, n)
		}
		if string(l["opt_state_finite"]) != "1" && string(l["opt_state_finite"]) != "true" {
			t.Errorf("step %d: opt_state_finite %s", i+1, l["opt_state_finite"])
		}
	}
	if runtime.GOOS == "linux" && float64(res.PeakRSSBytes) != peak {
		t.Errorf("Result.PeakRSSBytes %d, want the largest rss_bytes %g", res.PeakRSSBytes, peak)
	}
	man, err := runlog.ReadManifest(dir)
	if err != nil || man.MemoryEstimate <= 0 {
		t.Fatalf("manifest memory_estimate_bytes %d (%v)", man.MemoryEstimate, err)
	}
}

// TestLeakRaisesMemoryCreep: [debug] leak_mb_per_step raises the SEV1
// memory_creep on the run's own rss_bytes; the same run without the leak
// stays quiet.
func TestLeakRaisesMemoryCreep(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("rss_bytes is read from /proc")
	}
	for _, leak := range []bool{false, true} {
		dir := filepath.Join(t.TempDir(), "run")
		o := baseOpts(dir)
		o.Train.Steps, o.Train.EvalEvery, o.Checkpoint.Every = 50, 0, 0
		if leak {
			o.Debug.LeakFromStep, o.Debug.LeakMBPerStep = 15, 4
		}
		ob := newMonitorObserver(t, func(c *monitor.Config) { c.MemoryCreepWindow, c.MemoryCreepMB = 24, 48 })
		o.Observers = []Observer{ob}
		if _, err := Run(context.Background(), o); err != nil {
			t.Fatal(err)
		}
		got := ob.fired(monitor.RuleMemoryCreep)
		if leak != (len(got) > 0) {
			t.Fatalf("leak %v: memory_creep alerts %+v", leak, got)
		}
		if leak && (got[0].Severity != monitor.SEV1 || got[0].Step < 15+12) {
			t.Errorf("alert %+v: want SEV1 once most of a window leaked", got[0])
		}
	}
}

// TestCorruptCheckpointCaught: a byte flipped in a checkpoint right after
// it was installed is caught by the verification: checkpoint_ok 0 with
// the file named, the SEV0 checkpoint_failed, a rejected confirmation, and
// a resume that goes back to the checkpoint before it. The run goes on.
func TestCorruptCheckpointCaught(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	o := baseOpts(dir)
	o.Debug.CorruptCheckpointAtStep = 12 // the final checkpoint (every 4: 4, 8, 12)
	ob := newMonitorObserver(t, nil)
	o.Observers = []Observer{ob}
	res, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "checkpoints", checkpoint.Name(12))
	if res.Checkpoint == bad {
		t.Errorf("Result.Checkpoint is the corrupt %s", bad)
	}
	a := ob.fired(monitor.RuleCheckpointFailed)
	if len(a) != 1 || a[0].Severity != monitor.SEV0 || a[0].Step != 12 {
		t.Fatalf("checkpoint_failed alerts %+v, want one SEV0 at step 12", a)
	}
	raw, _ := os.ReadFile(filepath.Join(dir, "metrics.jsonl"))
	var line string
	for _, l := range strings.Split(string(raw), "\n") {
		if strings.Contains(l, `"event":"checkpoint"`) && strings.Contains(l, `"step":12,`) {
			line = l
		}
	}
	if !strings.Contains(line, `"checkpoint_ok":0`) || !strings.Contains(line, checkpoint.OptimizerFile+": SHA-256") {
		t.Errorf("checkpoint line %s: want checkpoint_ok 0 and the file named", line)
	}
	conf, err := checkpoint.ReadConfirmation(bad)
	if err != nil || conf == nil || conf.Status != checkpoint.Rejected || conf.Verification != checkpoint.VerifyFailed {
		t.Fatalf("confirmation %+v (%v)", conf, err)
	}
	list, err := checkpoint.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range list {
		if c.Step == 12 && (c.LastGood || c.Status != checkpoint.Rejected) {
			t.Errorf("the corrupt checkpoint: %+v", c)
		}
	}
	if got, err := checkpoint.Resolve(dir, "last"); err != nil || got == bad {
		t.Errorf("Resolve(last) = %s, %v", got, err)
	}
	// Resuming for more steps starts from step 8, not from the corrupt 12.
	o.Train.Steps, o.Observers, o.Debug.CorruptCheckpointAtStep = 13, nil, 0
	res, err = Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, "checkpoints", checkpoint.Name(8)); !res.Resumed {
		t.Fatalf("not resumed; want from %s", want)
	}
	if l := readLines(t, dir); len(l) != 13 || string(l[8]["step"]) != "9" {
		t.Fatalf("after the resume: %d step lines, the 9th is step %s; want steps 1-13 with 9-13 retrained", len(l), l[8]["step"])
	}
}

// TestRestoreTestEveryNth: checkpoint.verify_restore_every paces the
// restore test; a moment that differs from memory fails it.
func TestRestoreTestEveryNth(t *testing.T) {
	for _, tc := range []struct {
		every, written int
		kind           string
		want           bool
	}{{1, 1, "rolling", true}, {2, 1, "rolling", false}, {2, 2, "rolling", true}, {3, 1, "final", true}, {0, 5, "final", false}} {
		tr := &trainer{o: Options{Checkpoint: CheckpointConfig{VerifyRestoreEvery: tc.every}}, ckWritten: tc.written - 1}
		if got := tr.restoreDue(tc.kind); got != tc.want {
			t.Errorf("every %d, checkpoint %d (%s): restore test %v, want %v", tc.every, tc.written, tc.kind, got, tc.want)
		}
	}
}
