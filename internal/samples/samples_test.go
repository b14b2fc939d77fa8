package samples

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/datadir"
	"github.com/kestrel-lm/kestrel/internal/datasrc"
	"github.com/kestrel-lm/kestrel/internal/faults"
	"github.com/kestrel-lm/kestrel/internal/generate"
	"github.com/kestrel-lm/kestrel/internal/model"
	"github.com/kestrel-lm/kestrel/internal/optim"
	"github.com/kestrel-lm/kestrel/internal/runlog"
	"github.com/kestrel-lm/kestrel/internal/train"
)

func TestValidate(t *testing.T) {
	cases := []struct {
		name string
		edit func(*Config)
		want string // "" = valid
	}{
		{"defaults", func(*Config) {}, ""},
		{"off ignores the rest", func(c *Config) { c.Enabled, c.Tokens = false, -1 }, ""},
		{"no tokens", func(c *Config) { c.Tokens = 0 }, "samples.tokens"},
		{"too many tokens", func(c *Config) { c.Tokens = MaxTokens + 1 }, "samples.tokens"},
		{"greedy temperature", func(c *Config) { c.Temperature = 0 }, "samples.temperature"},
		{"negative top-k", func(c *Config) { c.TopK = -1 }, "samples.top_k"},
		{"too many prompts", func(c *Config) { c.Prompts = make([]string, MaxPrompts+1) }, "samples.prompts"},
		{"long prompt", func(c *Config) { c.Prompts = []string{"a", strings.Repeat("x", MaxPromptBytes+1)} }, "samples.prompts[1]"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := DefaultConfig()
			c.edit(&cfg)
			err := cfg.Validate()
			if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
				t.Fatalf("Validate() = %v, want %q", err, c.want)
			}
		})
	}
}

// tinyBytesRun trains a 1-layer byte-level model on Tiny Shakespeare for a
// few steps and returns the run directory and its final checkpoint.
func tinyBytesRun(t *testing.T) (run, ckpt string) {
	t.Helper()
	run = filepath.Join(t.TempDir(), "run")
	mc := model.DefaultConfig()
	mc.Vocab, mc.DModel, mc.NLayers, mc.NHeads, mc.NKVHeads, mc.MLPHidden, mc.SeqLen = 256, 32, 1, 2, 2, 64, 32
	tc := train.DefaultConfig()
	tc.Steps, tc.BatchSize, tc.EvalEvery, tc.EvalBatches, tc.LogEvery, tc.PeakGFLOPS = 3, 4, 0, 1, 0, 10
	oc := optim.DefaultConfig()
	oc.Warmup = 1
	cc := train.DefaultCheckpointConfig()
	cc.Every = 0
	p, err := datadir.Path("tinyshakespeare/input.txt")
	if err != nil {
		t.Fatal(err)
	}
	src, err := datasrc.OpenBytes(p, "", tc.ValFraction, mc.SeqLen, 1)
	if err != nil {
		t.Fatal(err)
	}
	res, err := train.Run(context.Background(), train.Options{Dir: run, Seed: 1, Model: mc, Optim: oc, Train: tc, Checkpoint: cc,
		Init: train.DefaultInitConfig(), Debug: faults.Default(), Data: src, Tokenizer: "bytes", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	return run, res.Checkpoint
}

// TestGenerate: every prompt (the byte-level defaults when none are
// listed) gives a greedy and a sampled record of the checkpoint, the
// greedy one is kestrel sample's temperature-0 text, the records are
// deterministic, and EMA weights are named.
func TestGenerate(t *testing.T) {
	run, ckpt := tinyBytesRun(t)
	cfg := DefaultConfig()
	cfg.Tokens = 12
	gs, err := Generate(ckpt, run, cfg)
	if err != nil {
		t.Fatal(err)
	}
	prompts := DefaultPrompts(true)
	if len(gs) != 2*len(prompts) {
		t.Fatalf("%d records, want %d", len(gs), 2*len(prompts))
	}
	for i, g := range gs {
		wantMode := []string{runlog.ModeGreedy, runlog.ModeSampled}[i%2]
		if g.Prompt != prompts[i/2] || g.Mode != wantMode || g.Step != 3 || g.Checkpoint != filepath.Join("checkpoints", filepath.Base(ckpt)) || g.Weights != "raw" || len(g.Text) != 12 || g.TokensSeen <= 0 {
			t.Errorf("record %d: %+v", i, g)
		}
		if err := g.Validate(); err != nil {
			t.Error(err)
		}
	}
	if gs[1].Temperature != cfg.Temperature || gs[1].TopK != cfg.TopK || gs[0].Temperature != 0 {
		t.Errorf("modes: greedy %+v sampled %+v", gs[0], gs[1])
	}
	want, err := generate.Generate(ckpt, generate.Options{Prompt: "ROMEO:", TopP: 1, Tokens: 12})
	if err != nil {
		t.Fatal(err)
	}
	if gs[2].Prompt+gs[2].Text != want {
		t.Errorf("greedy %q, kestrel sample gives %q", gs[2].Prompt+gs[2].Text, want)
	}
	again, err := Generate(ckpt, run, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i := range gs {
		if again[i].Text != gs[i].Text {
			t.Errorf("record %d not deterministic: %q vs %q", i, gs[i].Text, again[i].Text)
		}
	}
	cfg.EMA, cfg.Prompts = true, []string{"To be"}
	ema, err := Generate(ckpt, run, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(ema) != 2 || ema[0].Weights != "ema" || ema[0].Prompt != "To be" {
		t.Errorf("EMA records: %+v", ema)
	}
	cfg.Tokens = 0
	if _, err := Generate(ckpt, run, cfg); err == nil {
		t.Error("an invalid config generated")
	}
}
