package hfrun

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/config"
	"github.com/kestrel-lm/kestrel/internal/data/document"
	"github.com/kestrel-lm/kestrel/internal/datadir"
	"github.com/kestrel-lm/kestrel/internal/hf"
	"github.com/kestrel-lm/kestrel/internal/testrun"
	"github.com/kestrel-lm/kestrel/internal/train"
	"github.com/kestrel-lm/kestrel/tokenizer"
)

var quiet = testrun.Quiet()

// tinyDataset prepares a one-source dataset from Tiny Shakespeare with a
// 300-token BPE (<|endoftext|> = 299) and the eos separator.
func tinyDataset(t *testing.T) string {
	t.Helper()
	p, err := datadir.Path("tinyshakespeare/input.txt")
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var docs []document.Doc
	for i, para := range strings.Split(string(raw[:40000]), "\n\n") {
		if strings.TrimSpace(para) != "" {
			docs = append(docs, document.Doc{ID: "s:" + string(rune('a'+i%26)) + string(rune('0'+i/26%10)) + string(rune('0'+i/260)), Source: "shakespeare", Text: para})
		}
	}
	return testrun.Dataset(t, docs, 300)
}

func tinyConfig(vocab int) config.Config {
	cfg := config.Default()
	cfg.Model.Vocab, cfg.Model.DModel, cfg.Model.NLayers, cfg.Model.NHeads, cfg.Model.NKVHeads = vocab, 32, 2, 4, 2
	cfg.Model.MLPHidden, cfg.Model.SeqLen = 64, 32
	cfg.Data.MixBlock, cfg.Data.ValMaxSeqs, cfg.Data.Prefetch = 64, 8, 0
	cfg.Train.Steps, cfg.Train.BatchSize, cfg.Train.EvalEvery, cfg.Train.EvalBatches, cfg.Train.LogEvery, cfg.Train.PeakGFLOPS = 3, 4, 0, 1, 0, 10
	cfg.Optim.LR, cfg.Optim.Warmup = 3e-3, 1
	cfg.Optim.EMABeta = 0.9
	cfg.Train.ValFraction = 0.005 // bytes: the final evaluation reads every validation row
	cfg.Checkpoint.Every = 0
	return cfg
}

// trainTiny trains cfg on data (a dataset directory, or "" for bytes) into
// run, writing its config.toml there as run.Train would.
func trainTiny(t *testing.T, cfg config.Config, data, run string) {
	t.Helper()
	testrun.Train(t, cfg, data, run, func(o *train.Options) {
		o.WriteConfig = func(path string) error { return config.WriteFile(path, cfg) }
	})
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// TestExportImportRoundTrip: export a run (raw and EMA weights, bytes and
// dataset) and import it back: same model config, bit-identical weights,
// the special tokens of the run's tokenizer, a card from its records.
func TestExportImportRoundTrip(t *testing.T) {
	ds := tinyDataset(t)
	for _, tc := range []struct {
		name string
		data string
		qk   bool
		ema  bool
	}{{"bytes", "", false, false}, {"dataset-qwen3-ema", ds, true, true}} {
		t.Run(tc.name, func(t *testing.T) {
			vocab := 256
			if tc.data != "" {
				vocab = 320 // padded past the tokenizer's 300
			}
			cfg := tinyConfig(vocab)
			cfg.Model.QKNorm = tc.qk
			cfg.Model.DocMask = tc.data != "" // training-only: exported as is
			run := filepath.Join(t.TempDir(), "run")
			trainTiny(t, cfg, tc.data, run)
			f, err := os.OpenFile(filepath.Join(run, "metrics.jsonl"), os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.WriteString(`{"step":3,"bpb/shakespeare":2.5,"bench/hellaswag/acc_norm":0.25}` + "\n")
			f.Close()
			out := filepath.Join(t.TempDir(), "hf")
			res, err := Export(context.Background(), Options{Run: run, EMA: tc.ema, Out: out, Log: quiet})
			if err != nil {
				t.Fatal(err)
			}
			m, _, err := train.LoadModel(res.Checkpoint, tc.ema, quiet)
			if err != nil {
				t.Fatal(err)
			}
			got, err := hf.Load(out)
			if err != nil {
				t.Fatal(err)
			}
			want := m.Cfg
			want.DocMask, want.ZLoss = false, 0 // training-only: not in config.json
			if got.Config != want {
				t.Errorf("imported config %+v, want %+v", got.Config, want)
			}
			for _, tn := range m.Tensors() {
				st, _ := got.Weights.Get(tn.Name)
				v, err := st.Float32()
				if err != nil {
					t.Fatal(err)
				}
				for i, x := range v {
					if math.Float32bits(x) != math.Float32bits(m.Params[tn.Offset+i]) {
						t.Fatalf("%s[%d] = %g, want %g", tn.Name, i, x, m.Params[tn.Offset+i])
					}
				}
			}
			var hc map[string]any
			readJSON(t, filepath.Join(out, hf.ConfigFile), &hc)
			var stm map[string]string
			readJSON(t, filepath.Join(out, hf.SpecialTokensMapFile), &stm)
			tok, err := tokenizer.Load(filepath.Join(out, hf.TokenizerFile))
			if err != nil {
				t.Fatal(err)
			}
			card, _ := os.ReadFile(filepath.Join(out, hf.CardFile))
			for _, want := range []string{"bpb/shakespeare | 2.5000", "bench/hellaswag/acc_norm | 0.2500", "tokens trained", "final validation loss"} {
				if !strings.Contains(string(card), want) {
					t.Errorf("card lacks %q:\n%s", want, card)
				}
			}
			if tc.data == "" {
				if hc["bos_token_id"] != nil || hc["eos_token_id"] != nil || len(stm) != 0 {
					t.Errorf("byte-level: config ids %v %v, special tokens %v; want none", hc["bos_token_id"], hc["eos_token_id"], stm)
				}
				if ids := tok.Encode("Hi!\n"); tok.VocabSize() != 256 || len(ids) != 4 || ids[0] != 'H' || ids[3] != '\n' {
					t.Errorf("byte-level tokenizer.json: vocab %d, ids %v", tok.VocabSize(), ids)
				}
				return
			}
			if hc["eos_token_id"] != 299.0 || hc["bos_token_id"] != 299.0 || hc["architectures"].([]any)[0] != hf.Qwen3Arch {
				t.Errorf("config.json %v", hc)
			}
			if stm["eos_token"] != "<|endoftext|>" || stm["pad_token"] != "<|endoftext|>" {
				t.Errorf("special_tokens_map.json %v", stm)
			}
			m2, from, err := ImportSource(out)
			var cfg2 config.Config
			if err == nil {
				cfg2, err = config.WarmStartFrom("", nil, m2.Config, from)
			}
			if err != nil || cfg2.Model != want || cfg2.Init.From != train.HFPrefix+out || cfg2.Init.Mode != "weights" {
				t.Errorf("Import: %v, model %+v, init %+v", err, cfg2.Model, cfg2.Init)
			}
		})
	}
}

// TestExportRefusesNoPE: a NoPE model is refused with a message naming
// the setting unless Force, and the card then says so.
func TestExportRefusesNoPE(t *testing.T) {
	cfg := tinyConfig(256)
	cfg.Model.NoPEEvery, cfg.Train.Steps = 2, 1
	run := filepath.Join(t.TempDir(), "run")
	trainTiny(t, cfg, "", run)
	out := filepath.Join(t.TempDir(), "hf")
	_, err := Export(context.Background(), Options{Run: run, Out: out, Log: quiet})
	if !errors.Is(err, hf.ErrNotExpressible) || !strings.Contains(err.Error(), "nope_every = 2") || !strings.Contains(err.Error(), "--force") {
		t.Fatalf("err %v, want a refusal naming nope_every and --force", err)
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("refused export left a directory")
	}
	if _, err := Export(context.Background(), Options{Run: run, Out: out, Force: true, Log: quiet}); err != nil {
		t.Fatal(err)
	}
	card, _ := os.ReadFile(filepath.Join(out, hf.CardFile))
	if !strings.Contains(string(card), "exported with --force") {
		t.Errorf("card of a forced export has no warning:\n%s", card)
	}
}
