// Package testrun holds the tiny-run fixtures that tests across kestrel
// share: a byte-level Tiny Shakespeare config small enough to train in a
// second, its 16 KiB validation text, a one-source prepared dataset with a
// 320-token BPE, a dataset built straight from documents, a direct
// training call and a quiet logger. Only tests import it; each test sets
// the steps, schedule, checkpoints and monitor windows it asserts on.
package testrun

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/config"
	"github.com/kestrel-lm/kestrel/internal/data/document"
	"github.com/kestrel-lm/kestrel/internal/data/loader"
	"github.com/kestrel-lm/kestrel/internal/data/prepare"
	"github.com/kestrel-lm/kestrel/internal/data/shards"
	"github.com/kestrel-lm/kestrel/internal/datadir"
	"github.com/kestrel-lm/kestrel/internal/datasrc"
	"github.com/kestrel-lm/kestrel/internal/train"
	"github.com/kestrel-lm/kestrel/tokenizer"
)

// Shakespeare is the Tiny Shakespeare text every tiny run reads.
const Shakespeare = "${KESTREL_DATA}/tinyshakespeare/input.txt"

// Quiet returns a logger that discards every record.
func Quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// Bytes returns the defaults with the tiny byte-level model (vocab 256,
// d_model 32, 2 layers of 2 heads, MLP 64, sequence 32) on Tiny
// Shakespeare's bytes: batch 4, 2 evaluation batches, no periodic log
// line, a 10 GFLOPS peak, LR 3e-3 decaying to 3e-4.
func Bytes() config.Config {
	cfg := config.Default()
	cfg.Model.Vocab, cfg.Model.DModel, cfg.Model.NLayers, cfg.Model.NHeads, cfg.Model.NKVHeads = 256, 32, 2, 2, 2
	cfg.Model.MLPHidden, cfg.Model.SeqLen = 64, 32
	cfg.Data.Kind, cfg.Data.Train = "bytes", Shakespeare
	cfg.Train.BatchSize, cfg.Train.EvalBatches, cfg.Train.LogEvery = 4, 2, 0
	cfg.Train.PeakGFLOPS = 10
	cfg.Optim.LR, cfg.Optim.MinLR = 3e-3, 3e-4
	return cfg
}

// ValText writes the first 16 KiB of Tiny Shakespeare to dir/val.txt (a
// validation text whose full evaluation stays fast) and returns its path.
func ValText(dir string) (string, error) {
	src, err := datadir.Path("tinyshakespeare/input.txt")
	if err != nil {
		return "", err
	}
	text, err := os.ReadFile(src)
	if err != nil {
		return "", err
	}
	p := filepath.Join(dir, "val.txt")
	return p, os.WriteFile(p, text[:16<<10], 0o644)
}

// booksTOML is the dataset and model of Books.
const booksTOML = `
[prepare]
workers = 1
[prepare.decontam]
enabled = false
[prepare.tokenizer]
mode = "train"
vocab_size = 320
train_max_bytes = 200000
[[prepare.sources]]
name = "books"
inputs = ["${KESTREL_DATA}/tinyshakespeare/input.txt"]
format = "text"
split = "blank_lines"
group_bytes = 16384
filter = "books"
[data]
kind = "dataset"
sources = [{ name = "books", weight = 1.0 }]
[model]
vocab = 320
d_model = 32
n_layers = 1
n_heads = 2
n_kv_heads = 2
mlp_hidden = 64
seq_len = 32
`

// Books returns a one-source run on Tiny Shakespeare prepared with a
// 320-token BPE into data (small enough to prepare and train in a second
// or two), with sections (the test's own TOML tables, e.g. [train] and
// [checkpoint]) decoded over it.
func Books(t testing.TB, data, sections string) config.Config {
	t.Helper()
	cfg := config.Default()
	if err := config.Decode([]byte(booksTOML+sections), "test.toml", &cfg); err != nil {
		t.Fatal(err)
	}
	cfg.Data.Path = data
	return cfg
}

// Prepare builds cfg's dataset at cfg.Data.Path, replacing what is there.
func Prepare(t testing.TB, cfg config.Config) {
	t.Helper()
	if _, err := prepare.Run(context.Background(), cfg.Prepare, prepare.RunOptions{Out: cfg.Data.Path, Force: true, Log: Quiet()}); err != nil {
		t.Fatal(err)
	}
}

// Dataset trains a vocab-token BPE on the texts of docs and builds token
// shards of docs with it (the eos separator, a tenth for validation, seed
// 1) under a t.TempDir, as kestrel prepare would; it returns the dataset
// directory.
func Dataset(t testing.TB, docs []document.Doc, vocab int) string {
	t.Helper()
	tok, err := tokenizer.Train(context.Background(), func(yield func(string) bool) {
		for _, d := range docs {
			if !yield(d.Text) {
				return
			}
		}
	}, tokenizer.TrainOptions{VocabSize: vocab, Workers: 1})
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

// Train trains cfg with the trainer alone (no monitor, no run directory
// ritual) into dir on data, a prepared dataset directory or "" for Tiny
// Shakespeare's bytes, and leaves its final checkpoint there. edit, when
// not nil, changes the trainer's options first. A failure fails t.
func Train(t testing.TB, cfg config.Config, data, dir string, edit func(*train.Options)) {
	t.Helper()
	if err := TrainErr(cfg, data, dir, edit); err != nil {
		t.Fatal(err)
	}
}

// TrainErr is Train returning its error (for fixtures built once per test
// binary, outside any one test).
func TrainErr(cfg config.Config, data, dir string, edit func(*train.Options)) error {
	opts := train.Options{Dir: dir, Seed: cfg.Run.Seed, Model: cfg.Model, Optim: cfg.Optim, Train: cfg.Train,
		Checkpoint: cfg.Checkpoint, Init: cfg.Init, Debug: cfg.Debug, Logger: Quiet()}
	var err error
	if opts.Data, opts.Tokenizer, err = source(cfg, data); err != nil {
		return err
	}
	if edit != nil {
		edit(&opts)
	}
	_, err = train.Run(context.Background(), opts)
	return err
}

// source is the trainer's data for TrainErr: Tiny Shakespeare's bytes
// (data "") or a loader over the dataset in data, and the tokenizer's name.
func source(cfg config.Config, data string) (datasrc.Source, string, error) {
	if data == "" {
		p, err := datadir.Path("tinyshakespeare/input.txt")
		if err != nil {
			return nil, "", err
		}
		src, err := datasrc.OpenBytes(p, "", cfg.Train.ValFraction, cfg.Model.SeqLen, cfg.Run.Seed)
		return src, "bytes", err
	}
	sd, err := shards.Open(data)
	if err != nil {
		return nil, "", err
	}
	ds, err := loader.FromShards(sd)
	if err != nil {
		return nil, "", err
	}
	l, err := loader.New(ds, cfg.Data, loader.Options{SeqLen: cfg.Model.SeqLen, Seed: cfg.Run.Seed, Schedule: loader.ConstantBatch(cfg.Train.BatchSize), ReportBase: 1})
	return l, data, err
}
