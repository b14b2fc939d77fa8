package main

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/config"
	"github.com/kestrel-lm/kestrel/internal/run"
)

// tinyByteConfig is a one-layer byte-level Tiny Shakespeare run of steps
// steps, small enough for command tests.
func tinyByteConfig(steps int) config.Config {
	cfg := config.Default()
	cfg.Model.Vocab, cfg.Model.DModel, cfg.Model.NLayers, cfg.Model.NHeads, cfg.Model.NKVHeads = 256, 32, 1, 2, 2
	cfg.Model.MLPHidden, cfg.Model.SeqLen = 64, 32
	cfg.Data.Kind, cfg.Data.Train = "bytes", "${KESTREL_DATA}/tinyshakespeare/input.txt"
	cfg.Train.Steps, cfg.Train.BatchSize, cfg.Train.EvalEvery, cfg.Train.EvalBatches, cfg.Train.LogEvery = steps, 4, 25, 2, 0
	cfg.Train.PeakGFLOPS = 10
	return cfg
}

// trainTiny trains cfg into a new run directory, monitored as kestrel train
// runs it, and returns the directory.
func trainTiny(t *testing.T, cfg config.Config) string {
	t.Helper()
	runDir := filepath.Join(t.TempDir(), "run")
	if _, err := run.Train(context.Background(), cfg, runDir, run.Options{Logger: quietLogger()}); err != nil {
		t.Fatal(err)
	}
	return runDir
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
