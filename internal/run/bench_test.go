package run

import (
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/checkpoint"

	"github.com/kestrel-lm/kestrel/internal/data/shards"
	"github.com/kestrel-lm/kestrel/internal/eval"
	"github.com/kestrel-lm/kestrel/internal/runlog"
	"github.com/kestrel-lm/kestrel/monitor"
)

// TestInLoopBenchmarks: [eval] tasks run with the evaluations eval.every
// picks and at the last step; their numbers land in the evaluation's line
// of metrics.jsonl and in metrics.sqlite under registered names, and the
// manifest records the hash of every file they read.
func TestInLoopBenchmarks(t *testing.T) {
	root := t.TempDir()
	cfg := smallDatasetConfig(t, filepath.Join(root, "data"))
	cfg.Prepare.Tokenizer.Shards.ValFraction = 0.2
	cfg.Train.Steps, cfg.Train.EvalEvery = 10, 2
	cfg.Eval.Tasks = []string{"hellaswag", "piqa", "bpb", "gsm8k-nll", "memorization", "bpb-val"}
	cfg.Eval.Every, cfg.Eval.Limit = 4, 2
	prepareSmall(t, cfg)
	dir := filepath.Join(root, "run")
	if _, err := Train(context.Background(), cfg, dir, Options{Logger: quietLog(), Stdout: io.Discard}); err != nil {
		t.Fatal(err)
	}
	want := []string{"bench/hellaswag/acc", "bench/hellaswag/acc_norm", "bench_stderr/piqa/acc_norm", "bench/piqa/acc",
		"bpb/wiki", "bpb/gsm8k-answer", "bpb/val/books", "bpb/val", "memorization/train/exact_match", "memorization/heldout/token_overlap"}
	for _, f := range []string{"metrics.jsonl", "metrics.sqlite"} {
		log, err := runlog.Load(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range want {
			steps, _, err := log.Series(n, "step")
			if err != nil {
				t.Fatal(err)
			}
			if len(steps) != 3 || steps[0] != 4 || steps[1] != 8 || steps[2] != 10 {
				t.Errorf("%s: %s at steps %v, want [4 8 10]", f, n, steps)
			}
		}
		for _, n := range log.Names() {
			if _, ok := monitor.Lookup(n); !ok && (strings.HasPrefix(n, "bench") || strings.HasPrefix(n, "bpb") || strings.HasPrefix(n, "memorization")) {
				t.Errorf("%s records %s, which the metric registry does not know", f, n)
			}
		}
		if v, _, _ := log.Last("bench/hellaswag/acc"); !(v >= 0 && v <= 1) {
			t.Errorf("bench/hellaswag/acc = %v", v)
		}
		if v, _, _ := log.Last("bpb/wiki"); !(v > 0 && v < 20) {
			t.Errorf("bpb/wiki = %v", v)
		}
	}
	m, err := runlog.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"eval/hellaswag", "eval/piqa", "eval/bpb", "eval/gsm8k-nll"} {
		if len(m.EvalHashes[k]) != 64 {
			t.Errorf("manifest eval_hashes[%s] = %q", k, m.EvalHashes[k])
		}
	}
	if _, ok := m.EvalHashes["eval/memorization"]; ok {
		t.Error("memorization reads the run's own data: no eval hash expected")
	}
}

// TestInLoopBenchmarksRefused: an unknown task and an every that is not a
// multiple of train.eval_every are refused before training, naming the
// field.
func TestInLoopBenchmarksRefused(t *testing.T) {
	root := t.TempDir()
	cfg := smallDatasetConfig(t, filepath.Join(root, "data"))
	prepareSmall(t, cfg)
	for _, tc := range []struct {
		tasks []string
		every int
		want  string
	}{
		{[]string{"hellaswag", "mmlu"}, 0, "eval.tasks[1]"},
		{[]string{"piqa"}, 3, "eval.every"}, // train.eval_every = 2
		{[]string{"piqa", "piqa"}, 0, "listed twice"},
	} {
		c := cfg
		c.Train.EvalEvery = 2
		c.Eval.Tasks, c.Eval.Every = tc.tasks, tc.every
		_, err := Train(context.Background(), c, filepath.Join(root, "run-"+tc.want), Options{Logger: quietLog(), Stdout: io.Discard})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v every=%d: %v, want an error naming %s", tc.tasks, tc.every, err, tc.want)
		}
	}
}

// TestDatasetProvenance: kestrel prepare records each source's resolved
// inputs and, with decontamination, every eval set's files and sha256 in
// the dataset manifest, and eval.CheckCoverage reads them: the set it
// covered is decontaminated, another set is not.
func TestDatasetProvenance(t *testing.T) {
	root := t.TempDir()
	cfg := smallDatasetConfig(t, filepath.Join(root, "data"))
	cfg.Prepare.Decontam.Enabled = true
	cfg.Prepare.Decontam.Index.EvalSets = cfg.Prepare.Decontam.Index.EvalSets[:1] // GSM8K
	prepareSmall(t, cfg)
	ds, err := shards.Open(cfg.Data.Path)
	if err != nil {
		t.Fatal(err)
	}
	defer ds.Close()
	pv := ds.Manifest().Provenance
	if pv == nil || len(pv.Inputs["books"]) != 1 || !strings.HasSuffix(pv.Inputs["books"][0], "tinyshakespeare/input.txt") {
		t.Fatalf("provenance %+v", pv)
	}
	if pv.Decontam == nil || pv.Decontam.NGram != cfg.Prepare.Decontam.Index.NGram || len(pv.Decontam.EvalSets) != 1 ||
		pv.Decontam.EvalSets[0].Name != "gsm8k" || len(pv.Decontam.EvalSets[0].Files) != 1 || len(pv.Decontam.EvalSets[0].Files[0].SHA256) != 64 {
		t.Fatalf("decontam %+v", pv.Decontam)
	}
	cov, err := eval.CheckCoverage("run", checkpoint.State{Tokenizer: cfg.Data.Path, Model: cfg.Model}, []string{"gsm8k-nll", "hellaswag"})
	if err != nil || cov[0].Status != eval.Decontaminated || cov[1].Status != eval.NotDecontaminated {
		t.Fatalf("coverage %+v %v", cov, err)
	}
}
