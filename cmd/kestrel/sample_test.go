package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/config"
	"github.com/kestrel-lm/kestrel/internal/data/document"
	"github.com/kestrel-lm/kestrel/internal/data/shards"
	"github.com/kestrel-lm/kestrel/internal/datadir"
	"github.com/kestrel-lm/kestrel/internal/run"
	"github.com/kestrel-lm/kestrel/internal/train"
	"github.com/kestrel-lm/kestrel/tokenizer"
)

// tinyDataset prepares a small two-source dataset (Tiny Shakespeare and
// WikiText-2 paragraphs) under t.TempDir with a freshly trained 300-token
// BPE, as kestrel prepare would, and returns its directory.
func tinyDataset(t *testing.T) string {
	t.Helper()
	var texts []string
	var docs []document.Doc
	for _, s := range []struct{ src, rel, sep string }{{"shakespeare", "tinyshakespeare/input.txt", "\n\n"}, {"wiki", "wikitext-2/valid.txt", "\n \n"}} {
		p, err := datadir.Path(s.rel)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, para := range strings.Split(string(raw[:min(len(raw), 60000)]), s.sep) {
			if strings.TrimSpace(para) == "" {
				continue
			}
			docs = append(docs, document.Doc{ID: fmt.Sprintf("%s:%d", s.src, n), Source: s.src, Text: para})
			texts = append(texts, para)
			n++
		}
	}
	tok, err := tokenizer.Train(context.Background(), func(yield func(string) bool) {
		for _, s := range texts {
			if !yield(s) {
				return
			}
		}
	}, tokenizer.TrainOptions{VocabSize: 300, Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	tokPath := filepath.Join(root, "tok.json")
	if err := tok.Save(tokPath); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "ds")
	seq := func(yield func(document.Doc, error) bool) {
		for _, d := range docs {
			if !yield(d, nil) {
				return
			}
		}
	}
	if _, err := shards.Build(context.Background(), seq, tok, tokPath, shards.Config{ShardTokens: 1 << 16, ValFraction: 0.1, Seed: 1, Separator: "eos", Workers: 1}, dir); err != nil {
		t.Fatal(err)
	}
	return dir
}

// tinyDatasetRun is a small dataset-mode run config (model.vocab 320 > the
// tokenizer's 300, as a padded vocabulary would be).
func tinyDatasetRun(data string, steps int) config.Config {
	cfg := config.Default()
	cfg.Model.Vocab, cfg.Model.DModel, cfg.Model.NLayers, cfg.Model.NHeads, cfg.Model.NKVHeads = 320, 32, 1, 2, 2
	cfg.Model.MLPHidden, cfg.Model.SeqLen = 64, 32
	cfg.Data.Kind, cfg.Data.Path, cfg.Data.MixBlock, cfg.Data.ValMaxSeqs = "dataset", data, 64, 8
	cfg.Train.Steps, cfg.Train.BatchSize, cfg.Train.EvalEvery, cfg.Train.EvalBatches, cfg.Train.LogEvery, cfg.Train.PeakGFLOPS = steps, 4, 0, 1, 0, 10
	cfg.Optim.LR, cfg.Optim.Warmup = 3e-3, 2
	cfg.Checkpoint.Every = 0
	return cfg
}

func trainTiny(t *testing.T, cfg config.Config, out string) *train.Result {
	t.Helper()
	opts, err := run.TrainOptions(cfg, out, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	res, err := train.Run(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestSampleDatasetRun: a run trained with data.kind = "dataset" samples
// through the dataset's tokenizer: the text starts with the prompt, an
// empty prompt works, sampling is deterministic per seed, no id outside the
// tokenizer is produced, and a moved dataset is a clear error naming it.
func TestSampleDatasetRun(t *testing.T) {
	data := tinyDataset(t)
	run := filepath.Join(t.TempDir(), "run")
	trainTiny(t, tinyDatasetRun(data, 4), run)

	for _, opt := range []genOptions{
		{prompt: "ROMEO:", temperature: 0, topP: 1, tokens: 12},
		{prompt: "The ", temperature: 1, topK: 50, topP: 0.9, tokens: 12, ema: true, seed: 3},
		{prompt: "", temperature: 0.8, topP: 1, tokens: 12, seed: 1},
	} {
		a, err := generate(run, opt)
		if err != nil {
			t.Fatalf("%+v: %v", opt, err)
		}
		b, err := generate(run, opt)
		if err != nil || a != b {
			t.Fatalf("%+v: not deterministic: %q vs %q (%v)", opt, a, b, err)
		}
		cont, ok := strings.CutPrefix(a, opt.prompt)
		if !ok || cont == "" {
			t.Fatalf("%+v: %q does not continue the prompt", opt, a)
		}
		if strings.Contains(cont, "\uFFFD") { // what an unknown id decodes to
			t.Errorf("%+v: continuation %q holds an id outside the tokenizer", opt, cont)
		}
	}

	// kestrel sample prints what generate returns, plus a newline.
	var out strings.Builder
	cmd := newSampleCmd()
	cmd.SetOut(&out)
	cmd.SetErr(&strings.Builder{})
	cmd.SetArgs([]string{"--run", run, "--prompt", "ROMEO:", "--temperature", "0", "--tokens", "12"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	want, _ := generate(run, genOptions{prompt: "ROMEO:", temperature: 0, topK: 200, topP: 1, tokens: 12})
	if out.String() != want+"\n" {
		t.Errorf("kestrel sample printed %q, generate gives %q", out.String(), want)
	}

	moved := data + "-moved"
	if err := os.Rename(data, moved); err != nil {
		t.Fatal(err)
	}
	_, err := generate(run, genOptions{prompt: "x", topP: 1, tokens: 1})
	if err == nil || !strings.Contains(err.Error(), filepath.Join(data, "tokenizer.json")) || !strings.Contains(err.Error(), "moved") {
		t.Fatalf("moved dataset: want an error naming %s, got %v", data, err)
	}
}

// TestSampleBytesRun: byte-level runs sample as before (bytes in, bytes out,
// an empty prompt starts from a newline).
func TestSampleBytesRun(t *testing.T) {
	runDir := filepath.Join(t.TempDir(), "run")
	cfg := config.Default()
	cfg.Model.Vocab, cfg.Model.DModel, cfg.Model.NLayers, cfg.Model.NHeads, cfg.Model.NKVHeads = 256, 32, 1, 2, 2
	cfg.Model.MLPHidden, cfg.Model.SeqLen = 64, 32
	cfg.Data.Kind, cfg.Data.Train = "bytes", "${KESTREL_DATA}/tinyshakespeare/input.txt"
	cfg.Train.Steps, cfg.Train.BatchSize, cfg.Train.EvalEvery, cfg.Train.EvalBatches, cfg.Train.LogEvery = 3, 4, 25, 2, 0
	cfg.Train.PeakGFLOPS = 10
	trainTiny(t, cfg, runDir)
	a, err := generate(runDir, genOptions{prompt: "To be", temperature: 0.8, topK: 200, topP: 1, tokens: 20, seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(a, "To be") || len(a) != len("To be")+20 {
		t.Fatalf("bytes sample %q: want the prompt and 20 bytes", a)
	}
	e, err := generate(runDir, genOptions{temperature: 0, topP: 1, tokens: 5})
	if err != nil || len(e) != 5 {
		t.Fatalf("empty prompt: %q %v", e, err)
	}
	if _, err := generate(runDir, genOptions{topP: 0, tokens: 1}); err == nil {
		t.Error("top-p 0 accepted")
	}
}
