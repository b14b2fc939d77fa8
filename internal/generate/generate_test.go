package generate

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/config"
	"github.com/kestrel-lm/kestrel/internal/data/document"
	"github.com/kestrel-lm/kestrel/internal/data/loader"
	"github.com/kestrel-lm/kestrel/internal/data/shards"
	"github.com/kestrel-lm/kestrel/internal/datadir"
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

// tinyConfig is a small run config: vocab 256 for bytes, 320 (> the
// tokenizer's 300, as a padded vocabulary would be) for the dataset.
func tinyConfig(vocab, steps int) config.Config {
	cfg := config.Default()
	cfg.Model.Vocab, cfg.Model.DModel, cfg.Model.NLayers, cfg.Model.NHeads, cfg.Model.NKVHeads = vocab, 32, 1, 2, 2
	cfg.Model.MLPHidden, cfg.Model.SeqLen = 64, 32
	cfg.Data.MixBlock, cfg.Data.ValMaxSeqs, cfg.Data.Prefetch = 64, 8, 0
	cfg.Train.Steps, cfg.Train.BatchSize, cfg.Train.EvalEvery, cfg.Train.EvalBatches, cfg.Train.LogEvery, cfg.Train.PeakGFLOPS = steps, 4, 0, 1, 0, 10
	cfg.Optim.LR, cfg.Optim.Warmup = 3e-3, 2
	cfg.Checkpoint.Every = 0
	return cfg
}

// trainTiny trains cfg on data (a prepared dataset directory, or "" for
// Tiny Shakespeare bytes) into run and leaves its final checkpoint there.
func trainTiny(t *testing.T, cfg config.Config, data, run string) {
	t.Helper()
	opts := train.Options{Dir: run, Seed: cfg.Run.Seed, Model: cfg.Model, Optim: cfg.Optim, Train: cfg.Train,
		Checkpoint: cfg.Checkpoint, Init: cfg.Init, Debug: cfg.Debug,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if data == "" {
		p, err := datadir.Path("tinyshakespeare/input.txt")
		if err != nil {
			t.Fatal(err)
		}
		src, err := train.OpenBytes(p, "", cfg.Train.ValFraction, cfg.Model.SeqLen, cfg.Run.Seed)
		if err != nil {
			t.Fatal(err)
		}
		opts.Data, opts.Tokenizer = src, "bytes"
	} else {
		sd, err := shards.Open(data)
		if err != nil {
			t.Fatal(err)
		}
		ds, err := loader.FromShards(sd)
		if err != nil {
			t.Fatal(err)
		}
		l, err := loader.New(ds, cfg.Data, loader.Options{SeqLen: cfg.Model.SeqLen, Seed: cfg.Run.Seed, Schedule: loader.ConstantBatch(cfg.Train.BatchSize), ReportBase: 1})
		if err != nil {
			t.Fatal(err)
		}
		opts.Data, opts.Tokenizer = l, data
	}
	if _, err := train.Run(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
}

// TestGenerateDatasetRun: a run trained on a prepared dataset samples
// through the dataset's tokenizer: the text starts with the prompt, an
// empty prompt works, sampling is deterministic per seed, no id outside the
// tokenizer is produced, Stream receives exactly what is returned, and a
// moved dataset is a clear error naming it.
func TestGenerateDatasetRun(t *testing.T) {
	data := tinyDataset(t)
	run := filepath.Join(t.TempDir(), "run")
	trainTiny(t, tinyConfig(320, 4), data, run)

	for _, opt := range []Options{
		{Prompt: "ROMEO:", Temperature: 0, TopP: 1, Tokens: 12},
		{Prompt: "The ", Temperature: 1, TopK: 50, TopP: 0.9, Tokens: 12, EMA: true, Seed: 3},
		{Prompt: "", Temperature: 0.8, TopP: 1, Tokens: 12, Seed: 1},
	} {
		a, err := Generate(run, opt)
		if err != nil {
			t.Fatalf("%+v: %v", opt, err)
		}
		var streamed strings.Builder
		opt.Stream = &streamed
		b, err := Generate(run, opt)
		if err != nil || a != b {
			t.Fatalf("%+v: not deterministic: %q vs %q (%v)", opt, a, b, err)
		}
		if streamed.String() != a {
			t.Errorf("%+v: streamed %q, returned %q", opt, streamed.String(), a)
		}
		cont, ok := strings.CutPrefix(a, opt.Prompt)
		if !ok || cont == "" {
			t.Fatalf("%+v: %q does not continue the prompt", opt, a)
		}
		if strings.Contains(cont, "\uFFFD") { // what an unknown id decodes to
			t.Errorf("%+v: continuation %q holds an id outside the tokenizer", opt, cont)
		}
	}

	moved := data + "-moved"
	if err := os.Rename(data, moved); err != nil {
		t.Fatal(err)
	}
	_, err := Generate(run, Options{Prompt: "x", TopP: 1, Tokens: 1})
	if err == nil || !strings.Contains(err.Error(), filepath.Join(data, "tokenizer.json")) || !strings.Contains(err.Error(), "moved") {
		t.Fatalf("moved dataset: want an error naming %s, got %v", data, err)
	}
}

// TestGenerateBytesRun: byte-level runs sample bytes in, bytes out, and an
// empty prompt starts from a newline; bad settings are refused.
func TestGenerateBytesRun(t *testing.T) {
	run := filepath.Join(t.TempDir(), "run")
	trainTiny(t, tinyConfig(256, 3), "", run)
	a, err := Generate(run, Options{Prompt: "To be", Temperature: 0.8, TopK: 200, TopP: 1, Tokens: 20, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(a, "To be") || len(a) != len("To be")+20 {
		t.Fatalf("bytes sample %q: want the prompt and 20 bytes", a)
	}
	e, err := Generate(run, Options{Temperature: 0, TopP: 1, Tokens: 5})
	if err != nil || len(e) != 5 {
		t.Fatalf("empty prompt: %q %v", e, err)
	}
	for _, bad := range []Options{{TopP: 0, Tokens: 1}, {TopP: 1.5}, {TopP: 1, Temperature: -1}, {TopP: 1, TopK: -1}, {TopP: 1, Tokens: -1}} {
		if _, err := Generate(run, bad); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

// TestPickToken: temperature 0 is the argmax; top-k 1 always gives the
// argmax; top-p keeps the smallest set reaching p; the same seed gives the
// same draws.
func TestPickToken(t *testing.T) {
	logits := []float32{0.1, 3, 2.9, -1, 0}
	for _, c := range []struct {
		name    string
		temp    float64
		topK    int
		topP    float64
		allowed map[int32]bool
	}{
		{"greedy", 0, 0, 1, map[int32]bool{1: true}},
		{"top-k 1", 1, 1, 1, map[int32]bool{1: true}},
		{"top-k 2", 5, 2, 1, map[int32]bool{1: true, 2: true}},
		{"top-p small", 1, 0, 0.3, map[int32]bool{1: true}},
		{"top-p 0.9", 1, 0, 0.9, map[int32]bool{1: true, 2: true}},
		{"all", 10, 0, 1, map[int32]bool{0: true, 1: true, 2: true, 3: true, 4: true}},
	} {
		rng := rand.New(rand.NewPCG(1, 2))
		seen := map[int32]bool{}
		for i := 0; i < 400; i++ {
			id := PickToken(logits, c.temp, c.topK, c.topP, rng)
			if !c.allowed[id] {
				t.Fatalf("%s: picked %d", c.name, id)
			}
			seen[id] = true
		}
		if len(seen) != len(c.allowed) {
			t.Errorf("%s: picked %v, want every one of %v", c.name, seen, c.allowed)
		}
	}
	r1, r2 := rand.New(rand.NewPCG(7, 7)), rand.New(rand.NewPCG(7, 7))
	for i := 0; i < 50; i++ {
		if a, b := PickToken(logits, 1, 0, 1, r1), PickToken(logits, 1, 0, 1, r2); a != b {
			t.Fatalf("draw %d: %d vs %d with the same seed", i, a, b)
		}
	}
}

// TestCodecFor: bytes runs round-trip any byte string; a run naming no
// tokenizer with a non-byte vocabulary is an error.
func TestCodecFor(t *testing.T) {
	var st train.State
	st.Tokenizer, st.Model.Vocab = "bytes", 256
	c, err := CodecFor("r", st)
	if err != nil {
		t.Fatal(err)
	}
	s := "a\xff\n"
	ids, _ := c.Encode(s)
	if got := c.Decode(ids); got != s || len(ids) != 3 || c.Start[0] != '\n' {
		t.Fatalf("bytes codec: %q → %v → %q", s, ids, got)
	}
	st.Tokenizer, st.Model.Vocab = "", 512
	if _, err := CodecFor("r", st); err == nil || !strings.Contains(err.Error(), "512") {
		t.Fatalf("no tokenizer: %v", err)
	}
}
