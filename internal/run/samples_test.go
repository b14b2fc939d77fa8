package run

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/generate"
	"github.com/kestrel-lm/kestrel/internal/kernels/ops"
	"github.com/kestrel-lm/kestrel/internal/runlog"
	"github.com/kestrel-lm/kestrel/internal/samples"
)

// tinyBytesCheckpoint trains tinyRun for 3 steps with [samples] off and
// returns the run directory and its final checkpoint.
func tinyBytesCheckpoint(t *testing.T) (run, ckpt string) {
	t.Helper()
	run = filepath.Join(t.TempDir(), "run")
	cfg := tinyRun(3)
	cfg.Samples.Enabled = false
	res, err := Train(context.Background(), cfg, run, Options{Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	return run, res.Checkpoint
}

// TestGenerateSamples: every prompt (the byte-level defaults when none are
// listed) gives a greedy and a sampled record of the checkpoint, the
// greedy one is kestrel sample's temperature-0 text, the records are
// deterministic, and EMA weights are named.
func TestGenerateSamples(t *testing.T) {
	run, ckpt := tinyBytesCheckpoint(t)
	cfg := samples.DefaultConfig()
	cfg.Tokens = 12
	gs, err := GenerateSamples(ckpt, run, cfg, ops.FP32)
	if err != nil {
		t.Fatal(err)
	}
	prompts := samples.DefaultPrompts(true)
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
	again, err := GenerateSamples(ckpt, run, cfg, ops.FP32)
	if err != nil {
		t.Fatal(err)
	}
	for i := range gs {
		if again[i].Text != gs[i].Text {
			t.Errorf("record %d not deterministic: %q vs %q", i, gs[i].Text, again[i].Text)
		}
	}
	cfg.EMA, cfg.Prompts = true, []string{"To be"}
	ema, err := GenerateSamples(ckpt, run, cfg, ops.FP32)
	if err != nil {
		t.Fatal(err)
	}
	if len(ema) != 2 || ema[0].Weights != "ema" || ema[0].Prompt != "To be" {
		t.Errorf("EMA records: %+v", ema)
	}
	cfg.Tokens = 0
	if _, err := GenerateSamples(ckpt, run, cfg, ops.FP32); err == nil {
		t.Error("an invalid config generated")
	}
}

// TestTrainRefusesBadSamples: a [samples] value out of range is refused,
// naming the key, before the run directory is created.
func TestTrainRefusesBadSamples(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	cfg := tinyRun(3)
	cfg.Samples.Tokens = 0
	_, err := Train(context.Background(), cfg, dir, Options{Logger: quietLog()})
	if err == nil || !strings.Contains(err.Error(), "samples.tokens") {
		t.Fatalf("err %v, want one naming samples.tokens", err)
	}
	if _, err := os.Stat(dir); err == nil {
		t.Error("the run directory was created")
	}
}

// TestGenerateSamplesBF16: a bf16 run's samples are generated with the
// bf16 forward, as kestrel sample --precision bf16 generates them (the
// reference kernel where the CPU lacks bf16 hardware).
func TestGenerateSamplesBF16(t *testing.T) {
	t.Setenv("KESTREL_BF16_REFERENCE", "1")
	run, ckpt := tinyBytesCheckpoint(t)
	cfg := samples.DefaultConfig()
	cfg.Tokens, cfg.Prompts = 60, []string{"ROMEO:"}
	gs, err := GenerateSamples(ckpt, run, cfg, ops.BF16)
	if err != nil {
		t.Fatal(err)
	}
	fp, err := GenerateSamples(ckpt, run, cfg, ops.FP32)
	if err != nil {
		t.Fatal(err)
	}
	for i, g := range gs {
		o := generate.Options{Prompt: g.Prompt, TopP: 1, Tokens: cfg.Tokens, Seed: cfg.Seed, Temperature: g.Temperature, TopK: g.TopK, Precision: "bf16"}
		want, err := generate.Generate(ckpt, o)
		if err != nil {
			t.Fatal(err)
		}
		if g.Prompt+g.Text != want {
			t.Errorf("%s: bf16 sample %q, kestrel sample --precision bf16 gives %q", g.Mode, g.Prompt+g.Text, want)
		}
		t.Logf("%s: same text as fp32: %v", g.Mode, g.Text == fp[i].Text)
	}
}
