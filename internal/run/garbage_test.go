package run

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kestrel-lm/kestrel/configs"
	"github.com/kestrel-lm/kestrel/internal/config"
	"github.com/kestrel-lm/kestrel/internal/data/loader"
	"github.com/kestrel-lm/kestrel/internal/runlog"
	"github.com/kestrel-lm/kestrel/internal/train"
	"github.com/kestrel-lm/kestrel/monitor"
)

// shakespeareShort is configs/shakespeare-char.toml cut to steps steps on
// its real data ($KESTREL_DATA), with a small validation split and no
// in-loop benchmarks so that the test stays fast.
func shakespeareShort(t *testing.T, steps int) config.Config {
	t.Helper()
	b, err := configs.Read("shakespeare-char.toml")
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	if err := config.Decode(b, "configs/shakespeare-char.toml", &cfg); err != nil {
		t.Fatal(err)
	}
	cfg.Train.Steps, cfg.Train.EvalEvery, cfg.Train.ValFraction = steps, 0, 0.002
	cfg.Eval.Tasks = nil
	cfg.Checkpoint.Every = 1000
	cfg.Monitor.SQLite, cfg.Monitor.TensorBoard, cfg.Monitor.TraceSteps = false, false, 0
	return cfg
}

// batchAlerts are the garbage_batch and batch_anomaly alerts of a run.
func batchAlerts(t *testing.T, dir string) []monitor.Alert {
	var out []monitor.Alert
	for _, a := range readAlerts(t, dir) {
		if a.Rule == monitor.RuleGarbageBatch || a.Rule == monitor.RuleBatchAnomaly {
			out = append(out, a)
		}
	}
	return out
}

// TestGarbageBatchOnShakespeare: on a real run of the shipped
// shakespeare-char config, a batch of random base64 (debug.base64_data_*,
// encoded as the run's bytes) raises the SEV2 garbage_batch at its own
// step — step 3 of a fresh run, the first step after a resume — and
// nothing else does: the healthy batches before and after it raise no
// batch alert.
func TestGarbageBatchOnShakespeare(t *testing.T) {
	dir := t.TempDir()
	cfg := shakespeareShort(t, 6)
	cfg.Debug.Base64DataAtStep = 3
	if _, err := runMonitored(t, cfg, dir); err != nil {
		t.Fatal(err)
	}
	got := batchAlerts(t, dir)
	if len(got) != 1 || got[0].Rule != monitor.RuleGarbageBatch || got[0].Step != 3 || got[0].Severity != monitor.SEV2 {
		t.Fatalf("fresh run: batch alerts %+v, want one SEV2 garbage_batch at step 3", got)
	}
	// Resume from the final checkpoint of step 6 with the base64 batch at step 7.
	cfg = shakespeareShort(t, 8)
	cfg.Debug.Base64DataAtStep = 7
	if _, err := runMonitored(t, cfg, dir); err != nil {
		t.Fatal(err)
	}
	got = batchAlerts(t, dir)
	if len(got) != 2 || got[1].Rule != monitor.RuleGarbageBatch || got[1].Step != 7 {
		t.Fatalf("after the resume: batch alerts %+v, want garbage_batch at steps 3 and 7", got)
	}
}

// TestRestartStormOnResume: a run whose manifest records four starts in
// the last minutes raises the SEV2 restart_storm at the first step of its
// fifth start; its first start raises none.
func TestRestartStormOnResume(t *testing.T) {
	dir := t.TempDir()
	if _, err := runMonitored(t, tinyRun(4), dir); err != nil {
		t.Fatal(err)
	}
	if got := onlyRule(readAlerts(t, dir), monitor.RuleRestartStorm); len(got) != 0 {
		t.Fatalf("first start: %+v", got)
	}
	man, err := runlog.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	var crashes []runlog.Start
	for i := 3; i >= 1; i-- {
		crashes = append(crashes, runlog.Start{Time: now.Add(-time.Duration(i) * time.Minute).Format(time.RFC3339), Step: 4})
	}
	man.Starts = append(man.Starts, crashes...)
	if err := runlog.WriteManifest(dir, man); err != nil {
		t.Fatal(err)
	}
	if _, err := runMonitored(t, tinyRun(6), dir); err != nil {
		t.Fatal(err)
	}
	got := onlyRule(readAlerts(t, dir), monitor.RuleRestartStorm)
	if len(got) != 1 || got[0].Step != 5 || got[0].Severity != monitor.SEV2 || !strings.Contains(got[0].Message, "5 starts within") {
		t.Fatalf("fifth start: restart_storm %+v, want one SEV2 at step 5", got)
	}
}

func onlyRule(as []monitor.Alert, rule string) []monitor.Alert {
	var out []monitor.Alert
	for _, a := range as {
		if a.Rule == rule {
			out = append(out, a)
		}
	}
	return out
}

// TestGarbageBatchOnDataset: on a prepared dataset (BPE), the trainer
// measures bytes per token and the non-letter share through the dataset's
// tokenizer, and a base64 batch at step 4 is one garbage_batch naming the
// batch's source and documents.
func TestGarbageBatchOnDataset(t *testing.T) {
	root := t.TempDir()
	cfg := smallDatasetConfig(t, filepath.Join(root, "data"))
	prepareSmall(t, cfg)
	dir := filepath.Join(root, "run")
	cfg.Train.Steps, cfg.Checkpoint.Every = 8, 1000
	cfg.Debug.Base64DataAtStep = 4
	opts, err := TrainOptions(cfg, dir, quietLog())
	if err != nil {
		t.Fatal(err)
	}
	ob, err := NewObserver(cfg, dir, opts.Logger, &opts.Manifest)
	if err != nil {
		t.Fatal(err)
	}
	ob.Batch = LoaderBatches(opts.Data.(*loader.Loader))
	opts.Observers = append(opts.Observers, ob)
	_, err = train.Run(context.Background(), opts)
	if err := ob.Finish(err); err != nil {
		t.Fatal(err)
	}
	got := batchAlerts(t, dir)
	if len(got) != 1 || got[0].Rule != monitor.RuleGarbageBatch || got[0].Step != 4 || !strings.Contains(got[0].Message, "sources [books]") || !strings.Contains(got[0].Message, "documents [") {
		t.Fatalf("batch alerts %+v, want one garbage_batch at step 4 naming its source and documents", got)
	}
	b, err := os.ReadFile(filepath.Join(dir, "metrics.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), `"batch_bytes_per_token"`); n != 8 {
		t.Errorf("batch_bytes_per_token on %d of 8 steps", n)
	}
}
