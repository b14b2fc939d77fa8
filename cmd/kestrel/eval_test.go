package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/config"
	"github.com/kestrel-lm/kestrel/internal/eval"
	"github.com/kestrel-lm/kestrel/internal/run"
	"github.com/kestrel-lm/kestrel/internal/train"
)

// TestEvalCLI: kestrel eval prints the table, or with --json the result of
// eval.Run, and refuses a missing --run and an unknown task. (Scoring itself
// is tested in internal/eval.)
func TestEvalCLI(t *testing.T) {
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
	exec := func(args ...string) (string, error) {
		var out strings.Builder
		cmd := newEvalCmd()
		cmd.SetOut(&out)
		cmd.SetErr(&strings.Builder{})
		cmd.SetArgs(args)
		err := cmd.Execute()
		return out.String(), err
	}
	tab, err := exec("--run", runDir, "--tasks", "piqa,bpb", "--limit", "3")
	if err != nil || !strings.Contains(tab, "piqa") || !strings.Contains(tab, "bits/byte") {
		t.Fatalf("table %q (%v)", tab, err)
	}
	js, err := exec("--run", runDir, "--tasks", "hellaswag", "--limit", "4", "--checkpoint", "last", "--json")
	var res eval.Result
	if err != nil || json.Unmarshal([]byte(js), &res) != nil || len(res.MC) != 1 || res.MC[0].Task != "hellaswag" || res.MC[0].N != 4 || res.Step != 3 {
		t.Fatalf("json %q (%v)", js, err)
	}
	// the new tasks read the byte-level run's data through its config.toml
	b, err := config.Marshal(cfg)
	if err != nil || os.WriteFile(filepath.Join(runDir, "config.toml"), b, 0o644) != nil {
		t.Fatal(err)
	}
	js, err = exec("--run", runDir, "--tasks", "gsm8k-nll,memorization,bpb-val", "--limit", "2", "--json")
	res = eval.Result{}
	if err != nil || json.Unmarshal([]byte(js), &res) != nil || len(res.NLL) != 1 || res.NLL[0].N != 2 || res.Mem == nil ||
		res.Mem.Train.Docs != 2 || res.Mem.HeldOut.Docs != 2 || len(res.BPB) != 1 || res.BPB[0].Name != "val" || res.BPB[0].Tokens != 64 {
		t.Fatalf("new tasks json %q (%v)", js, err)
	}
	if tab, err := exec("--run", runDir, "--tasks", "gsm8k-nll,memorization", "--limit", "1"); err != nil || !strings.Contains(tab, "exact match") || !strings.Contains(tab, "gsm8k-nll") {
		t.Fatalf("new tasks table %q (%v)", tab, err)
	}
	for _, args := range [][]string{{"--tasks", "piqa"}, {"--run", runDir, "--tasks", "nope"}, {"--run", runDir, "--checkpoint", "step-99"}} {
		if _, err := exec(args...); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
}
