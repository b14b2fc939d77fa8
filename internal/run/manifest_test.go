package run

import (
	"context"
	"database/sql"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/config"
	"github.com/kestrel-lm/kestrel/internal/data/loader"
	"github.com/kestrel-lm/kestrel/internal/runlog"
	"github.com/kestrel-lm/kestrel/internal/testrun"
	"github.com/kestrel-lm/kestrel/monitor"
)

// smallDatasetConfig is testrun.Books (Tiny Shakespeare with a 320-token
// BPE, prepared into data) trained 6 steps of batch 4 without evaluation,
// with a checkpoint every 3 steps.
func smallDatasetConfig(t *testing.T, data string) config.Config {
	t.Helper()
	return testrun.Books(t, data, `
[train]
steps = 6
batch_size = 4
eval_every = 0
log_every = 0
peak_gflops = 10
[checkpoint]
every = 3
`)
}

func prepareSmall(t *testing.T, cfg config.Config) {
	t.Helper()
	testrun.Prepare(t, cfg)
}

// TestResumeOnRebuiltDatasetIsSEV1: a dataset rebuilt at the same path with
// one changed setting changes dataset_hash, and the resumed run says so.
func TestResumeOnRebuiltDatasetIsSEV1(t *testing.T) {
	root := t.TempDir()
	cfg := smallDatasetConfig(t, filepath.Join(root, "data"))
	dir := filepath.Join(root, "run")
	prepareSmall(t, cfg)
	if _, err := Train(context.Background(), cfg, dir, Options{Logger: quietLog(), Stdout: io.Discard}); err != nil {
		t.Fatal(err)
	}
	first, err := runlog.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	if first.DatasetHash == "" || first.TokenizerHash == "" || first.ConfigHash == "" || first.ModulesHash == "" || first.Kernel == "" {
		t.Fatalf("manifest lacks identity fields: %+v", first)
	}

	// Resume on the same dataset: no mismatch.
	cfg.Train.Steps = 9
	if _, err := Train(context.Background(), cfg, dir, Options{Logger: quietLog(), Stdout: io.Discard}); err != nil {
		t.Fatal(err)
	}
	for _, a := range readAlerts(t, dir) {
		if a.Rule == monitor.RuleManifest && !strings.Contains(a.Message, "config_hash") {
			t.Fatalf("unchanged dataset alerted: %+v", a)
		}
	}

	// Rebuild the dataset with one setting changed, resume: SEV1 naming
	// dataset_hash (the steps change only the config hash).
	rebuilt := cfg
	rebuilt.Prepare.Sources[0].GroupBytes = 8192
	prepareSmall(t, rebuilt)
	cfg.Train.Steps = 12
	if _, err := Train(context.Background(), cfg, dir, Options{Logger: quietLog(), Stdout: io.Discard}); err != nil {
		t.Fatal(err)
	}
	var got *runlog.Alert
	for _, a := range readAlerts(t, dir) {
		if a.Rule == monitor.RuleManifest && strings.Contains(a.Message, "dataset_hash") {
			got = &a
		}
	}
	if got == nil || got.Severity != monitor.SEV1 || got.Step != 10 {
		t.Fatalf("no SEV1 manifest_mismatch naming dataset_hash at step 10: %+v", got)
	}
	last, err := runlog.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	if want := "dataset_hash: " + first.DatasetHash[:16] + " → " + last.DatasetHash[:16]; !strings.Contains(got.Message, want) {
		t.Errorf("message %q lacks %q", got.Message, want)
	}
	if b, err := os.ReadFile(filepath.Join(dir, DataReportFile)); err != nil || !strings.Contains(string(b), `"fingerprint"`) {
		t.Errorf("the run keeps no copy of the dataset report: %v", err)
	}
	if len(last.Starts) != 3 || last.Starts[2].ResumedFrom == "" {
		t.Errorf("starts %+v", last.Starts)
	}
	// The metric store knows which data the run read.
	db, err := sql.Open("sqlite", filepath.Join(dir, "metrics.sqlite"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var h string
	if err := db.QueryRow("SELECT value FROM run WHERE key = 'dataset_hash'").Scan(&h); err != nil || h != last.DatasetHash {
		t.Errorf("run table dataset_hash %q, %v; want %q", h, err, last.DatasetHash)
	}
}

// TestNanoMustHavesEmitted: every metric of the registry's nano must-have
// set is recorded by a kestrel train run (metrics.jsonl or the metric
// store), or the registry says why kestrel does not emit it.
func TestNanoMustHavesEmitted(t *testing.T) {
	root := t.TempDir()
	cfg := smallDatasetConfig(t, filepath.Join(root, "data"))
	cfg.Train.Steps, cfg.Train.EvalEvery = 8, 4
	// Two sources (slice_val_loss) and decontamination (train_val_overlap).
	wiki := cfg.Prepare.Sources[0]
	wiki.Name, wiki.Inputs = "wiki", []string{"${KESTREL_DATA}/wikitext-2/valid.txt"}
	cfg.Prepare.Sources = append(cfg.Prepare.Sources, wiki)
	cfg.Data.Sources = append(cfg.Data.Sources, loader.SourceConfig{Name: "wiki", Weight: 1})
	cfg.Prepare.Decontam.Enabled = true
	cfg.Prepare.Decontam.Index.EvalSets = cfg.Prepare.Decontam.Index.EvalSets[:1] // GSM8K
	cfg.Prepare.Tokenizer.Shards.ValFraction = 0.2                                // every source gets validation documents
	prepareSmall(t, cfg)
	dir := filepath.Join(root, "run")
	if _, err := Train(context.Background(), cfg, dir, Options{Logger: quietLog(), Stdout: io.Discard}); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, f := range []string{"metrics.jsonl", "metrics.sqlite"} {
		log, err := runlog.Load(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if log.Rows == 0 {
			t.Fatalf("%s is empty", f)
		}
		for _, n := range log.Names() {
			seen[monitor.BaseName(n)] = true
		}
	}
	lines, err := os.ReadFile(filepath.Join(dir, "metrics.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"tokens_seen", "steps_seen", "lr_phase"} { // axes and a string field: not columns
		if strings.Contains(string(lines), `"`+n+`":`) {
			seen[n] = true
		}
	}
	for _, m := range monitor.Metrics() {
		if !m.Nano {
			continue
		}
		switch {
		case m.NotEmitted != "" && seen[m.Name]:
			t.Errorf("%s is marked not emitted (%s) but the run recorded it", m.Name, m.NotEmitted)
		case m.NotEmitted == "" && !seen[m.Name]:
			t.Errorf("nano must-have %s is not recorded by kestrel train and the registry gives no reason", m.Name)
		}
	}
}
