package run

import (
	"context"
	"io"
	"math"
	"path/filepath"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/data/loader"
	"github.com/kestrel-lm/kestrel/internal/runlog"
)

// TestHonestCounters: with BOS packing (padding in every batch),
// tokens_seen and tokens_per_sec count the non-pad targets, tokens_computed
// and mfu every position, steps_seen the applied updates, and
// source_mix_share is a share of tokens.
func TestHonestCounters(t *testing.T) {
	root := t.TempDir()
	cfg := smallDatasetConfig(t, filepath.Join(root, "data"))
	wiki := cfg.Prepare.Sources[0]
	wiki.Name, wiki.Inputs = "wiki", []string{"${KESTREL_DATA}/wikitext-2/valid.txt"}
	wiki.GroupBytes = 0 // short documents: BOS packing pads most rows
	cfg.Prepare.Sources = append(cfg.Prepare.Sources, wiki)
	cfg.Data.Sources = append(cfg.Data.Sources, loader.SourceConfig{Name: "wiki", Weight: 1})
	cfg.Data.Packing = loader.PackBOS
	cfg.Model.SeqLen = 512 // longer than most documents: rows are padded
	cfg.Train.Steps = 6
	prepareSmall(t, cfg)
	dir := filepath.Join(root, "run")
	if _, err := Train(context.Background(), cfg, dir, Options{Logger: quietLog(), Stdout: io.Discard}); err != nil {
		t.Fatal(err)
	}
	log, err := runlog.Load(filepath.Join(dir, "metrics.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	col := func(n string) []float32 {
		c := log.Column(n)
		if c == nil {
			t.Fatalf("no %s in metrics.jsonl", n)
		}
		return c
	}
	loss, pad, perUpdate, computed := col("train_loss_raw"), col("pad_fraction"), col("tokens_per_update"), col("tokens_computed")
	tps, mfu, batch := col("tokens_per_sec"), col("mfu"), col("batch_size")
	var seen float64
	padded := false
	for i := 0; i < log.Rows; i++ {
		if math.IsNaN(float64(loss[i])) {
			continue // not a step line
		}
		step := log.Step[i]
		positions := float64(batch[i]) * float64(cfg.Model.SeqLen)
		if want := positions * (1 - float64(pad[i])); math.Abs(float64(perUpdate[i])-want) > 0.5 {
			t.Errorf("step %v: tokens_per_update %v, want %v (positions × (1 − pad_fraction))", step, perUpdate[i], want)
		}
		padded = padded || pad[i] > 0
		seen += float64(perUpdate[i])
		if log.Tokens[i] != seen {
			t.Errorf("step %v: tokens_seen %v, want the sum of tokens_per_update %v", step, log.Tokens[i], seen)
		}
		if want := step * positions; float64(computed[i]) != want {
			t.Errorf("step %v: tokens_computed %v, want %v", step, computed[i], want)
		}
		// mfu counts every position, tokens_per_sec the real ones.
		if r := float64(mfu[i]) / float64(tps[i]) * float64(perUpdate[i]) / positions; i > 0 && math.Abs(r/(float64(mfu[0])/float64(tps[0])*float64(perUpdate[0])/positions)-1) > 1e-3 {
			t.Errorf("step %v: mfu is not proportional to the positions computed", step)
		}
		var share float64
		for _, src := range []string{"books", "wiki"} {
			if c := log.Column("source_mix_share/" + src); c != nil {
				share += float64(c[i])
			}
		}
		if math.Abs(share-1) > 1e-6 {
			t.Errorf("step %v: source_mix_share sums to %v", step, share)
		}
	}
	if !padded {
		t.Fatal("BOS packing produced no padding: the test checks nothing")
	}
	if v, _, ok := log.Last("tokens_computed"); !ok || float64(log.Tokens[log.Rows-1]) >= v {
		t.Errorf("tokens_seen %v is not below tokens_computed %v under padding", log.Tokens[log.Rows-1], v)
	}
}
