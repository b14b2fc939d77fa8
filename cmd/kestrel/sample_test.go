package main

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/config"
	"github.com/kestrel-lm/kestrel/internal/generate"
	"github.com/kestrel-lm/kestrel/internal/run"
	"github.com/kestrel-lm/kestrel/internal/train"
)

// TestSampleCLI: kestrel sample prints what generate.Generate returns,
// plus a newline, and refuses bad flags. (Sampling itself is tested in
// internal/generate.)
func TestSampleCLI(t *testing.T) {
	runDir := filepath.Join(t.TempDir(), "run")
	cfg := config.Default()
	cfg.Model.Vocab, cfg.Model.DModel, cfg.Model.NLayers, cfg.Model.NHeads, cfg.Model.NKVHeads = 256, 32, 1, 2, 2
	cfg.Model.MLPHidden, cfg.Model.SeqLen = 64, 32
	cfg.Data.Kind, cfg.Data.Train = "bytes", "${KESTREL_DATA}/tinyshakespeare/input.txt"
	cfg.Train.Steps, cfg.Train.BatchSize, cfg.Train.EvalEvery, cfg.Train.EvalBatches, cfg.Train.LogEvery = 3, 4, 25, 2, 0
	cfg.Train.PeakGFLOPS = 10
	opts, err := run.TrainOptions(cfg, runDir, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := train.Run(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	cmd := newSampleCmd()
	cmd.SetOut(&out)
	cmd.SetErr(&strings.Builder{})
	cmd.SetArgs([]string{"--run", runDir, "--prompt", "To be", "--temperature", "0", "--tokens", "12"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	want, err := generate.Generate(runDir, generate.Options{Prompt: "To be", Temperature: 0, TopK: 200, TopP: 1, Tokens: 12})
	if err != nil || out.String() != want+"\n" {
		t.Errorf("kestrel sample printed %q, Generate gives %q (%v)", out.String(), want, err)
	}
	for _, args := range [][]string{{"--prompt", "x"}, {"--run", runDir, "--top-p", "0"}} {
		cmd := newSampleCmd()
		cmd.SetOut(&strings.Builder{})
		cmd.SetErr(&strings.Builder{})
		cmd.SetArgs(args)
		if err := cmd.Execute(); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
}
