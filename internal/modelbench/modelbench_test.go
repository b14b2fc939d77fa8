package modelbench

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/model"
)

func tiny() model.Config {
	return model.Config{Vocab: 37, DModel: 16, NLayers: 2, NHeads: 4, NKVHeads: 2, MLPHidden: 24, SeqLen: 12,
		RopeTheta: 10000, NormEps: 1e-5, QKNorm: true, Tied: true, NoPEEvery: 2, InitStd: 0.2}
}

func TestModelConfig(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "run.toml")
	bad := filepath.Join(dir, "bad.toml")
	os.WriteFile(good, []byte("[model]\nd_model = 64\nn_heads = 2\nn_kv_heads = 2\n"), 0o644)
	os.WriteFile(bad, []byte("[model]\nd_modle = 64\n"), 0o644)
	for _, c := range []struct {
		preset, path string
		dModel       int
		err          string
	}{
		{"ref7m", "", 256, ""},
		{"demo", "", 192, ""},
		{"demo-quick", "", 96, ""},
		{"", good, 64, ""},
		{"nope", "", 0, `unknown preset "nope"`},
		{"", bad, 0, "bad.toml"},
	} {
		cfg, err := ModelConfig(c.preset, c.path, nil)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q %q: want error containing %q, got %v", c.preset, c.path, c.err, err)
			}
			continue
		}
		if err != nil || cfg.DModel != c.dModel {
			t.Errorf("%q %q: d_model %d, %v; want %d", c.preset, c.path, cfg.DModel, err, c.dModel)
		}
	}
}

func TestEval(t *testing.T) {
	r, err := Eval(context.Background(), EvalOptions{Model: tiny(), Batch: 3, Pairs: 3, Warmup: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !(r.ForwardOnlyTPS > 0 && r.TrainTPS > 0 && r.ForwardTPS > 0 && r.Ratio > 0 && r.RatioForward > 0) {
		t.Fatalf("non-positive rates: %+v", r)
	}
	if r.MaxAbsDiff > 1e-5 || r.LossRelDiff > 1e-6 {
		t.Fatalf("LogProbs vs Forward: max |Δ| %g, loss relative %g", r.MaxAbsDiff, r.LossRelDiff)
	}
	if r.Model == nil || r.Batch != 3 || r.Pairs != 3 {
		t.Errorf("result %+v; want the model measured, batch 3, 3 pairs (what kestrel bench eval prints: cmd/kestrel/internal/show)", r)
	}
	for _, o := range []EvalOptions{{Model: tiny(), Batch: 0, Pairs: 1}, {Model: tiny(), Batch: 1, Pairs: 0}, {Model: model.Config{}, Batch: 1, Pairs: 1}} {
		if _, err := Eval(context.Background(), o); err == nil {
			t.Errorf("%+v accepted", o)
		}
	}
}

func TestSample(t *testing.T) {
	r, err := Sample(context.Background(), SampleOptions{Model: tiny(), Prompt: 3, Tokens: 30, Pairs: 2})
	if err != nil {
		t.Fatal(err)
	}
	if !(r.CacheTPS > 0 && r.NoCacheTPS > 0 && r.Speedup > 0) || r.Source != "random init" {
		t.Fatalf("result %+v", r)
	}
	if r.Model == nil || r.Tokens != 30 {
		t.Fatalf("result %+v; want the model measured and 30 tokens", r)
	}
	for _, c := range []struct {
		o   SampleOptions
		err string
	}{
		{SampleOptions{Model: tiny(), Prompt: 13, Tokens: 1, Pairs: 1}, "seq_len"},
		{SampleOptions{Model: tiny(), Prompt: 0, Tokens: 1, Pairs: 1}, "--prompt"},
		{SampleOptions{Model: tiny(), Prompt: 1, Tokens: 0, Pairs: 1}, "--tokens"},
		{SampleOptions{Run: filepath.Join(t.TempDir(), "none"), Prompt: 1, Tokens: 1, Pairs: 1}, "none"},
	} {
		if _, err := Sample(context.Background(), c.o); err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%+v: want error containing %q, got %v", c.o, c.err, err)
		}
	}
}
