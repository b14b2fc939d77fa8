package branch

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/compare"
	"github.com/kestrel-lm/kestrel/internal/config"
	"github.com/kestrel-lm/kestrel/internal/data/loader"
	"github.com/kestrel-lm/kestrel/internal/run"
	"github.com/kestrel-lm/kestrel/internal/testrun"
)

// datasetRun is testrun.Books with WikiText-2 as a second source, wiki
// (weights 0.5/0.5), a 300-token BPE trained on 100 kB per source, a tenth
// for validation, and checkpoints every 4 steps.
func datasetRun(t *testing.T, data string) config.Config {
	t.Helper()
	cfg := testrun.Books(t, data, `
[prepare.tokenizer.shards]
val_fraction = 0.1
[[prepare.sources]]
name = "wiki"
inputs = ["${KESTREL_DATA}/wikitext-2/valid.txt"]
format = "text"
split = "blank_lines"
group_bytes = 16384
filter = "none"
[train]
steps = 12
batch_size = 8
eval_every = 4
log_every = 0
peak_gflops = 10
[checkpoint]
every = 4
keep = 5
[samples]
enabled = false
`)
	cfg.Prepare.Tokenizer.VocabSize, cfg.Prepare.Tokenizer.TrainMaxBytes, cfg.Model.Vocab = 300, 100000, 300
	cfg.Data.Sources[0].Weight = 0.5
	cfg.Data.Sources = append(cfg.Data.Sources, loader.SourceConfig{Name: "wiki", Weight: 0.5})
	cfg.Data.ValMaxSeqs = 16
	testrun.Prepare(t, cfg)
	return cfg
}

// mixShare reads source_mix_share/<source> of each step.
func mixShare(t *testing.T, dir, source string) map[int]float64 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "metrics.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[int]float64{}
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatal(err)
		}
		if v, ok := m["source_mix_share/"+source].(float64); ok {
			out[int(m["step"].(float64))] = v
		}
	}
	return out
}

// TestBranchDataWeight: on a two-source dataset, a branch from step 4 with
// data.stages moving the mixture to wiki from step 5 trains on that
// mixture after the branch point (and on the parent's before it); a stage
// naming a source the dataset lacks is refused before anything is written,
// naming the field.
func TestBranchDataWeight(t *testing.T) {
	root := t.TempDir()
	cfg := datasetRun(t, filepath.Join(root, "data"))
	parent := filepath.Join(root, "parent")
	if _, err := run.Train(context.Background(), cfg, parent, run.Options{Logger: testrun.Quiet()}); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(root, "wiki")
	b, err := Prepare(Options{Parent: parent, From: "step-4", Out: out, Steps: 4, Logger: testrun.Quiet(),
		Set: []string{`data.stages=[{start_step = 5, weights = {books = 0.1, wiki = 0.9}}]`}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := run.Train(context.Background(), b.Config, b.Dir, run.Options{Logger: testrun.Quiet()}); err != nil {
		t.Fatal(err)
	}
	pw, bw := mixShare(t, parent, "wiki"), mixShare(t, out, "wiki")
	if bw[4] != pw[4] || pw[6] > 0.6 || bw[6] < 0.8 || len(bw) != 8 {
		t.Errorf("source_mix_share/wiki: parent %v, branch %v; want the branch's ≥ 0.8 after step 4 only", pw, bw)
	}
	// kestrel compare of the branch: val per source, and the change.
	rep, err := compare.Compare([]string{out}, compare.Options{ResolveConfig: ResolvedConfig})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, d := range rep.Pairs[0].Evals {
		names = append(names, d.Metric)
	}
	if got := strings.Join(names, " "); !strings.Contains(got, "slice_val_loss/books") || !strings.Contains(got, "slice_val_loss/wiki") {
		t.Errorf("compared metrics %s; want slice_val_loss per source", got)
	}
	if c := rep.Pairs[0].Config; len(c) != 1 || c[0].Field != "data.stages" {
		t.Errorf("config differences %+v; want data.stages only", c)
	}
	bad := filepath.Join(root, "bad")
	_, err = Prepare(Options{Parent: parent, From: "step-4", Out: bad, Steps: 4, Logger: testrun.Quiet(),
		Set: []string{`data.stages=[{start_step = 5, weights = {nosuch = 1.0}}]`}})
	if err == nil || !strings.Contains(err.Error(), `data.stages[0].weights: unknown source "nosuch"`) {
		t.Errorf("a stage naming an unknown source: %v", err)
	}
	if _, serr := os.Stat(bad); serr == nil {
		t.Errorf("%s was written", bad)
	}
}
