package run

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kestrel-lm/kestrel/internal/checkpoint"

	"github.com/kestrel-lm/kestrel/internal/config"
	"github.com/kestrel-lm/kestrel/internal/runlog"
	"github.com/kestrel-lm/kestrel/internal/stepbench"
	"github.com/kestrel-lm/kestrel/internal/testrun"
	"github.com/kestrel-lm/kestrel/internal/train"
	"github.com/kestrel-lm/kestrel/monitor"
)

// tinyRun is a byte-level Tiny Shakespeare config small enough for tests.
func tinyRun(steps int) config.Config {
	cfg := testrun.Bytes()
	cfg.Train.Steps, cfg.Train.EvalEvery = steps, 25
	cfg.Optim.Warmup = 20
	cfg.Checkpoint.Every, cfg.Checkpoint.Keep = 20, 2
	cfg.Monitor.Window, cfg.Monitor.SpikeFollow, cfg.Monitor.Cooldown = 32, 20, 20
	return cfg
}

func runMonitored(t *testing.T, cfg config.Config, dir string) (*train.Result, error) {
	t.Helper()
	opts, err := TrainOptions(cfg, dir, quietLog())
	if err != nil {
		t.Fatal(err)
	}
	tm, err := NewObserver(cfg, dir, opts.Logger, &opts.Manifest)
	if err != nil {
		t.Fatal(err)
	}
	opts.Observers = append(opts.Observers, tm)
	res, err := train.Run(context.Background(), opts)
	return res, tm.Finish(err)
}

func readAlerts(t *testing.T, dir string) []monitor.Alert {
	t.Helper()
	out, err := runlog.ReadAlerts(filepath.Join(dir, "alerts.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestTrainNaNIsSEV0: an injected NaN stops the run, keeps the last good
// checkpoint intact, and writes a SEV0 incident bundle.
func TestTrainNaNIsSEV0(t *testing.T) {
	dir := t.TempDir()
	cfg := tinyRun(80)
	cfg.Debug.NaNAtStep = 50
	_, err := runMonitored(t, cfg, dir)
	var nanErr *train.NaNError
	if !errors.As(err, &nanErr) || nanErr.Step != 50 {
		t.Fatalf("run error %v, want NaNError at step 50", err)
	}
	if !strings.HasSuffix(nanErr.LastCheckpoint, "step-00000040") {
		t.Errorf("last checkpoint %q", nanErr.LastCheckpoint)
	}
	if err := checkpoint.Verify(nanErr.LastCheckpoint); err != nil {
		t.Errorf("last good checkpoint damaged: %v", err)
	}
	var sev0 *monitor.Alert
	for _, a := range readAlerts(t, dir) {
		if a.Severity == monitor.SEV0 {
			a := a
			sev0 = &a
		}
	}
	if sev0 == nil || sev0.Rule != monitor.RuleNaNInf || sev0.Step != 50 || sev0.Evidence == "" {
		t.Fatalf("SEV0 alert %+v", sev0)
	}
	inc := filepath.Join(dir, sev0.Evidence)
	for _, f := range []string{"alert.json", "RUNBOOK.md", "metrics.jsonl", "config.toml", "manifest.json"} {
		if _, err := os.Stat(filepath.Join(inc, f)); err != nil {
			t.Errorf("incident bundle lacks %s", f)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(inc, "metrics.jsonl")); !strings.Contains(string(b), `"step":49`) {
		t.Errorf("bundle lacks the steps before the NaN")
	}
	if _, err := os.Stat(filepath.Join(dir, "checkpoints", "step-00000060")); err == nil {
		t.Errorf("a checkpoint was written after the NaN")
	}
}

// TestTrainLRSpikeIsSEV1: a 100× LR spike for 2 steps gives a SEV1 loss
// spike whose message says the update norm preceded the loss, and a
// classifier verdict.
func TestTrainLRSpikeIsSEV1(t *testing.T) {
	dir := t.TempDir()
	cfg := tinyRun(200)
	cfg.Train.BatchSize = 16
	cfg.Debug.LRSpikeAtStep, cfg.Debug.LRSpikeFactor, cfg.Debug.LRSpikeSteps = 120, 100, 2
	if _, err := runMonitored(t, cfg, dir); err != nil {
		t.Fatal(err)
	}
	if os.Getenv("KESTREL_KEEP_RUN") != "" {
		exec_cp(t, dir, os.Getenv("KESTREL_KEEP_RUN"))
	}
	var spike, verdict *monitor.Alert
	for _, a := range readAlerts(t, dir) {
		a := a
		switch {
		case a.Rule == monitor.RuleLossSpike && a.Step >= 120 && spike == nil:
			spike = &a
		case a.Rule == monitor.RuleSpikeVerdict && a.Step >= 120 && verdict == nil:
			verdict = &a
		}
	}
	if spike == nil || spike.Severity != monitor.SEV1 {
		t.Fatalf("no SEV1 loss spike after step 120: %+v", readAlerts(t, dir))
	}
	t.Logf("spike: %s", spike.Message)
	if !strings.Contains(spike.Message, "update norm") || !strings.Contains(spike.Message, "preceded loss by") {
		t.Errorf("spike message lacks the precursor: %s", spike.Message)
	}
	if verdict == nil || verdict.Verdict == "" {
		t.Fatalf("no verdict")
	}
	t.Logf("verdict: %s %s", verdict.Severity, verdict.Message)
	for _, f := range []string{"metrics.sqlite", "alerts.jsonl"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("run lacks %s", f)
		}
	}
	if fs, _ := filepath.Glob(filepath.Join(dir, "events.out.tfevents.*")); len(fs) != 1 {
		t.Errorf("event files %v", fs)
	}
	// trace.json holds steps 10..29 with their phases.
	var trace []map[string]any
	if b, err := os.ReadFile(filepath.Join(dir, "trace.json")); err != nil || json.Unmarshal(b, &trace) != nil {
		t.Fatalf("trace.json: %v", err)
	}
	phases := map[string]int{}
	for _, e := range trace {
		if n, _ := e["name"].(string); e["ph"] == "X" {
			phases[strings.Fields(n)[0]]++
		}
	}
	if phases["step"] != 20 || phases["forward"] < 20 || phases["backward"] != phases["forward"] || phases["data_wait"] != phases["forward"] || phases["optimizer"] != 20 {
		t.Errorf("trace phases %v", phases)
	}
	// Measured spans: within each step, forward ends before backward starts
	// and everything lies inside the step's slice.
	var stepTs, stepEnd, lastEnd float64
	for _, e := range trace {
		if e["ph"] != "X" {
			continue
		}
		name, _ := e["name"].(string)
		ts, _ := e["ts"].(float64)
		dur, _ := e["dur"].(float64)
		if strings.HasPrefix(name, "step ") {
			stepTs, stepEnd, lastEnd = ts, ts+dur, ts
			continue
		}
		if ts < stepTs-1 || ts+dur > stepEnd+1 {
			t.Errorf("%s [%v, %v] outside its step [%v, %v]", name, ts, ts+dur, stepTs, stepEnd)
		}
		if name == "backward" && ts < lastEnd-1 {
			t.Errorf("backward starts at %v before the forward ended at %v", ts, lastEnd)
		}
		lastEnd = ts + dur
	}
}

// TestTrainLRSpikeX1000IsSEV0: a ×1000 LR step blows the run up (it ends
// near val loss 12 on shakespeare-char otherwise); the monitor calls it a
// SEV0 divergence within a few steps, the run stops without a checkpoint
// after the blow-up, Train returns an error (kestrel train exits non-zero)
// and an incident bundle holds the evidence.
func TestTrainLRSpikeX1000IsSEV0(t *testing.T) {
	dir := t.TempDir()
	cfg := tinyRun(200)
	cfg.Train.BatchSize = 16
	cfg.Debug.LRSpikeAtStep, cfg.Debug.LRSpikeFactor, cfg.Debug.LRSpikeSteps = 70, 1000, 3
	res, err := runMonitored(t, cfg, dir)
	if err == nil || !strings.Contains(err.Error(), "monitor paused the run") || !strings.Contains(err.Error(), monitor.RuleDivergence) {
		t.Fatalf("run error %v, want the monitor's divergence pause", err)
	}
	var div *monitor.Alert
	for _, a := range readAlerts(t, dir) {
		if a.Severity == monitor.SEV0 && div == nil {
			a := a
			div = &a
		}
	}
	if div == nil || div.Rule != monitor.RuleDivergence || div.Step < 70 || div.Step > 75 || div.Evidence == "" {
		t.Fatalf("first SEV0 %+v, want divergence within 5 steps of 70 with an incident bundle", div)
	}
	t.Logf("%s at step %d: %s", div.Rule, div.Step, div.Message)
	if res != nil && res.Step != int(div.Step) {
		t.Errorf("trained to step %d, want the stop at the alert's step %d", res.Step, div.Step)
	}
	for _, f := range []string{"alert.json", "RUNBOOK.md", "metrics.jsonl", "config.toml", "manifest.json"} {
		if _, err := os.Stat(filepath.Join(dir, div.Evidence, f)); err != nil {
			t.Errorf("incident bundle lacks %s", f)
		}
	}
	if cks, _ := filepath.Glob(filepath.Join(dir, "checkpoints", "step-*")); len(cks) == 0 || !strings.HasSuffix(cks[len(cks)-1], "step-00000060") {
		t.Errorf("checkpoints %v, want the last good one at step 60 and none after the blow-up", cks)
	}
	// Every step line carries the process CPU time beside the wall time
	// (getrusage; unix systems).
	if runtime.GOOS != "windows" && runtime.GOOS != "plan9" && runtime.GOOS != "js" && runtime.GOOS != "wasip1" {
		b, err := os.ReadFile(filepath.Join(dir, "metrics.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			if strings.Contains(line, `"train_loss_raw"`) && !strings.Contains(line, `"cpu_time":`) {
				t.Fatalf("metrics.jsonl line %d lacks cpu_time: %.200s", i+1, line)
			}
		}
	}
}

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func exec_cp(t *testing.T, dir, dst string) {
	b, _ := os.ReadFile(filepath.Join(dir, "metrics.jsonl"))
	os.WriteFile(dst, b, 0o644)
}

// timedObserver measures the synchronous cost of the monitor's hooks.
type timedObserver struct {
	tm       *Observer
	busy     time.Duration
	stepTime float64
	steps    int
}

func (o *timedObserver) OnStep(m *runlog.Step) error {
	t0 := time.Now()
	err := o.tm.OnStep(m)
	o.busy += time.Since(t0)
	if m.Step > 3 { // leave out start-up steps
		o.stepTime += m.StepTime
		o.steps++
	}
	return err
}
func (o *timedObserver) OnEval(e *runlog.Eval) error { return o.tm.OnEval(e) }
func (o *timedObserver) OnCheckpoint(c *runlog.Checkpoint) error {
	return o.tm.OnCheckpoint(c)
}

// TestMonitorOverheadRef7m trains ref7m (batch 8, seq 256) with every
// per-step vital, the SQLite store and TensorBoard on, and reports the
// monitor's cost (hook time + background store commits) as a fraction of
// step time measured in the same run. Long: set KESTREL_OVERHEAD=STEPS.
func TestMonitorOverheadRef7m(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("KESTREL_OVERHEAD"))
	if n <= 0 {
		t.Skip("set KESTREL_OVERHEAD=STEPS to measure the monitor's overhead on ref7m")
	}
	cfg := tinyRun(n)
	cfg.Model = stepbench.Ref7mConfig()
	cfg.Train.BatchSize, cfg.Train.EvalEvery, cfg.Train.PeakGFLOPS = 8, 0, 336
	cfg.Checkpoint.Every = 0
	cfg.Monitor = monitor.DefaultConfig()
	dir := t.TempDir()
	opts, err := TrainOptions(cfg, dir, quietLog())
	if err != nil {
		t.Fatal(err)
	}
	tm, err := NewObserver(cfg, dir, opts.Logger, &opts.Manifest)
	if err != nil {
		t.Fatal(err)
	}
	ob := &timedObserver{tm: tm}
	opts.Observers = []train.Observer{ob}
	_, err = train.Run(context.Background(), opts)
	t0 := time.Now()
	if err := tm.Finish(err); err != nil {
		t.Fatal(err)
	}
	closeT := time.Since(t0)
	bg2 := tm.m.BackgroundBusy()
	step := ob.stepTime / float64(ob.steps)
	hook := ob.busy.Seconds() / float64(n)
	store := bg2.Seconds() / float64(n)
	t.Logf("ref7m: %d steps, mean step_time %.1f ms; monitor hook %.3f ms/step (%.3f%%), store commits %.3f ms/step (%.3f%%), total %.3f%%; close %.0f ms",
		ob.steps, 1e3*step, 1e3*hook, 100*hook/step, 1e3*store, 100*store/step, 100*(hook+store)/step, 1e3*closeT.Seconds())
	fmt.Printf(`{"op":"monitor_overhead","preset":"ref7m","steps":%d,"step_ms":%.2f,"hook_ms":%.4f,"store_ms":%.4f,"overhead_pct":%.4f}`+"\n",
		ob.steps, 1e3*step, 1e3*hook, 1e3*store, 100*(hook+store)/step)
}

// TestTrainResumeManifestMismatch: resuming a run under a different config
// fires manifest_mismatch naming config_hash.
func TestTrainResumeManifestMismatch(t *testing.T) {
	dir := t.TempDir()
	cfg := tinyRun(40)
	if _, err := runMonitored(t, cfg, dir); err != nil {
		t.Fatal(err)
	}
	for _, a := range readAlerts(t, dir) {
		if a.Rule == monitor.RuleManifest {
			t.Fatalf("fresh run alerted %+v", a)
		}
	}
	cfg.Train.Steps = 60
	if _, err := runMonitored(t, cfg, dir); err != nil {
		t.Fatal(err)
	}
	var got *monitor.Alert
	for _, a := range readAlerts(t, dir) {
		if a.Rule == monitor.RuleManifest {
			a := a
			got = &a
		}
	}
	if got == nil || got.Severity != monitor.SEV1 || got.Step != 41 || !strings.Contains(got.Message, "config_hash") {
		t.Fatalf("manifest alert %+v", got)
	}
}
