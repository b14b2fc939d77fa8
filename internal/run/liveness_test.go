package run

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kestrel-lm/kestrel/internal/datasrc"

	"github.com/kestrel-lm/kestrel/internal/train"
	"github.com/kestrel-lm/kestrel/monitor"
)

// hangingData blocks the Fill of one step until alerts.jsonl holds a
// stalled alert (or a timeout passes), noting whether it did.
type hangingData struct {
	datasrc.Source
	step    int // 1-based step whose batch hangs
	alerts  string
	timeout time.Duration
	sawIt   *bool
}

func (h hangingData) Fill(step, batch, row0, n int, inputs, targets, segIDs []int32, srcs []int) error {
	if step+1 == h.step && row0 == 0 {
		end := time.Now().Add(h.timeout)
		for time.Now().Before(end) {
			if b, _ := os.ReadFile(h.alerts); bytes.Contains(b, []byte(`"rule":"`+monitor.RuleStalled+`"`)) {
				*h.sawIt = true
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	return h.Source.Fill(step, batch, row0, n, inputs, targets, segIDs, srcs)
}

// TestTrainStepStalled: a step whose data source hangs gets a SEV1 stalled
// alert while it is still running; the run then completes normally, and
// the evaluations and checkpoints between steps raise nothing.
func TestTrainStepStalled(t *testing.T) {
	dir := t.TempDir()
	cfg := tinyRun(40)
	cfg.Monitor.StalledFactor, cfg.Monitor.StalledMinSeconds = 10, 0.5
	opts, err := TrainOptions(cfg, dir, quietLog())
	if err != nil {
		t.Fatal(err)
	}
	saw := false
	opts.Data = hangingData{Source: opts.Data, step: 30, alerts: filepath.Join(dir, "alerts.jsonl"), timeout: 20 * time.Second, sawIt: &saw}
	tm, err := NewObserver(cfg, dir, opts.Logger, &opts.Manifest)
	if err != nil {
		t.Fatal(err)
	}
	opts.Observers = append(opts.Observers, tm)
	res, err := train.Run(context.Background(), opts)
	if err := tm.Finish(err); err != nil {
		t.Fatal(err)
	}
	if res.Step != 40 {
		t.Errorf("run ended at step %d", res.Step)
	}
	if !saw {
		t.Fatal("no stalled alert while step 30 hung")
	}
	var stalled []monitor.Alert
	for _, a := range readAlerts(t, dir) {
		if a.Rule == monitor.RuleStalled {
			stalled = append(stalled, a)
		}
	}
	if len(stalled) != 1 || stalled[0].Step != 30 || stalled[0].Severity != monitor.SEV1 {
		t.Errorf("stalled alerts %+v, want one SEV1 at step 30", stalled)
	}
}

// padFrom turns every batch from a step on into padding (no target
// carries a loss), as a broken packer or an exhausted source would.
type padFrom struct {
	datasrc.Source
	step int // 1-based
}

func (p padFrom) Fill(step, batch, row0, n int, inputs, targets, segIDs []int32, srcs []int) error {
	if err := p.Source.Fill(step, batch, row0, n, inputs, targets, segIDs, srcs); err != nil {
		return err
	}
	if step+1 >= p.step {
		for i := range targets {
			targets[i] = -1
		}
	}
	return nil
}

// TestTrainTokensFlatline: batches that are all padding leave tokens_seen
// flat while steps advance: SEV1 tokens_flatline after tokens_flat_steps.
func TestTrainTokensFlatline(t *testing.T) {
	dir := t.TempDir()
	cfg := tinyRun(30)
	cfg.Monitor.TokensFlatSteps = 5
	opts, err := TrainOptions(cfg, dir, quietLog())
	if err != nil {
		t.Fatal(err)
	}
	opts.Data = padFrom{opts.Data, 21}
	tm, err := NewObserver(cfg, dir, opts.Logger, &opts.Manifest)
	if err != nil {
		t.Fatal(err)
	}
	opts.Observers = append(opts.Observers, tm)
	_, err = train.Run(context.Background(), opts)
	err = tm.Finish(err)
	var flat []monitor.Alert
	for _, a := range readAlerts(t, dir) {
		t.Logf("%s %s step %d: %s", a.Severity, a.Rule, a.Step, a.Message)
		if a.Rule == monitor.RuleTokensFlat {
			flat = append(flat, a)
		}
	}
	if err != nil {
		t.Errorf("run error: %v", err)
	}
	if len(flat) != 1 || flat[0].Step != 25 || flat[0].Severity != monitor.SEV1 {
		t.Errorf("tokens_flatline alerts %+v, want one SEV1 at step 25", flat)
	}
}
