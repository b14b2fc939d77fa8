package hf

// The torch golden of the export: a tiny exported model per architecture
// (testdata/golden/<case>/), token ids, and the per-token log-probabilities
// tools/torchref/hf_forward.py computes from that directory alone (config.json
// semantics of LlamaForCausalLM / Qwen3ForCausalLM in plain torch). To
// regenerate:
//
//	go test ./internal/hf -run TestGoldenHFForward -write-hf-golden
//	for c in llama qwen3; do d=internal/hf/testdata/golden/$c; \
//	  /usr/bin/python3 tools/torchref/hf_forward.py $d $d/ids.json $d/torch_logprobs.json; done
//	go test ./internal/hf -run TestGoldenHFForward

import (
	"bytes"
	"encoding/json"
	"flag"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/model"
)

var writeGolden = flag.Bool("write-hf-golden", false, "write testdata/golden/<case>/ (export + ids.json) for tools/torchref/hf_forward.py")

type goldenCase struct {
	name string
	cfg  model.Config
	seed uint64
}

func goldenCases() []goldenCase {
	llama := model.Config{Vocab: 300, DModel: 32, NLayers: 2, NHeads: 4, NKVHeads: 2, MLPHidden: 48, SeqLen: 32,
		RopeTheta: 500, NormEps: 1e-6, InitStd: 0.25}
	qwen := llama
	qwen.NKVHeads, qwen.QKNorm, qwen.Tied, qwen.RopeTheta, qwen.NormEps = 1, true, true, 10000, 1e-5
	qwen.DocMask, qwen.ZLoss = true, 1e-4 // training-only: must not change the export
	return []goldenCase{{"llama", llama, 11}, {"qwen3", qwen, 12}}
}

// goldenModel is model.New with larger weights and norm gains away from 1,
// so the log-probabilities spread widely and a wrong op cannot hide.
func goldenModel(t *testing.T, c goldenCase) *model.Model {
	m, err := model.New(c.cfg, c.seed)
	if err != nil {
		t.Fatal(err)
	}
	for k, tn := range m.Tensors() {
		if tn.Kind != "norm" {
			continue
		}
		for i := range tn.Size {
			m.Params[tn.Offset+i] = float32(1 + 0.5*math.Sin(0.37*float64(i)+float64(k)))
		}
	}
	return m
}

// goldenIDs are two sequences of T deterministic ids.
func goldenIDs(vocab, T int) [][]int32 {
	out := make([][]int32, 2)
	x := uint32(12345)
	for s := range out {
		for range T {
			x = x*1664525 + 1013904223
			out[s] = append(out[s], int32(x>>8)%int32(vocab))
		}
	}
	return out
}

// kestrelLogprobs runs model.Forward and returns log p(ids[i+1] | ids[:i+1]).
func kestrelLogprobs(t *testing.T, m *model.Model, ids []int32) []float64 {
	T := len(ids) - 1
	b := &model.Batch{B: 1, T: T, Inputs: ids[:T], Targets: ids[1:]}
	if _, err := m.Forward(b); err != nil {
		t.Fatal(err)
	}
	logits, lse := m.Outputs()
	V := m.Cfg.Vocab
	out := make([]float64, T)
	for i := range T {
		out[i] = float64(logits[i*V+int(ids[i+1])]) - float64(lse[i])
	}
	return out
}

func TestGoldenHFForward(t *testing.T) {
	for _, c := range goldenCases() {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join("testdata", "golden", c.name)
			m := goldenModel(t, c)
			ids := goldenIDs(c.cfg.Vocab, 25)
			eot := &Special{ID: int32(c.cfg.Vocab - 1), Content: "<|endoftext|>"}
			e := Export{Config: c.cfg, Tensors: m.Tensors(), Params: m.Params, Tokens: Tokens{BOS: eot, EOS: eot, PAD: eot},
				Tokenizer: []byte("{}\n"), Card: "# golden " + c.name + "\n\nSee internal/hf/golden_test.go.\n"}
			if *writeGolden {
				if err := Write(dir, e); err != nil {
					t.Fatal(err)
				}
				b, _ := json.Marshal(map[string]any{"ids": ids})
				if err := os.WriteFile(filepath.Join(dir, "ids.json"), append(b, '\n'), 0o644); err != nil {
					t.Fatal(err)
				}
				t.Skip("wrote", dir, "; now run tools/torchref/hf_forward.py on it")
			}
			// The export is deterministic: re-exporting gives the committed files.
			tmp := filepath.Join(t.TempDir(), "hf")
			if err := Write(tmp, e); err != nil {
				t.Fatal(err)
			}
			for _, f := range []string{ConfigFile, WeightsFile, GenerationFile, TokenizerConfigFile, SpecialTokensMapFile} {
				a, err1 := os.ReadFile(filepath.Join(dir, f))
				b, err2 := os.ReadFile(filepath.Join(tmp, f))
				if err1 != nil || err2 != nil || !bytes.Equal(a, b) {
					t.Errorf("%s differs from the committed golden (%v %v)", f, err1, err2)
				}
			}
			// Import of the committed directory is bit-identical.
			got, err := Load(dir)
			if err != nil {
				t.Fatal(err)
			}
			back, _ := model.New(got.Config, 0)
			for _, tn := range back.Tensors() {
				st, _ := got.Weights.Get(tn.Name)
				v, _ := st.Float32()
				for i, x := range v {
					if math.Float32bits(x) != math.Float32bits(m.Params[tn.Offset+i]) {
						t.Fatalf("import %s[%d] = %g, want %g", tn.Name, i, x, m.Params[tn.Offset+i])
					}
				}
			}
			// kestrel's log-probabilities match torch's HF forward within 1e-4.
			var gold struct{ Logprobs [][]float64 }
			b, err := os.ReadFile(filepath.Join(dir, "torch_logprobs.json"))
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(b, &gold); err != nil || len(gold.Logprobs) != len(ids) {
				t.Fatalf("torch_logprobs.json: %v (%d sequences)", err, len(gold.Logprobs))
			}
			worst, lo, hi := 0.0, 0.0, -1e9
			for s, seq := range ids {
				lp := kestrelLogprobs(t, m, seq)
				if len(lp) != len(gold.Logprobs[s]) {
					t.Fatalf("sequence %d: %d log-probs, torch has %d", s, len(lp), len(gold.Logprobs[s]))
				}
				for i, x := range lp {
					worst = max(worst, math.Abs(x-gold.Logprobs[s][i]))
					lo, hi = min(lo, x), max(hi, x)
				}
			}
			if worst > 1e-4 {
				t.Errorf("max |kestrel − torch HF| log-prob = %.3g, want ≤ 1e-4", worst)
			}
			if hi-lo < 2 {
				t.Errorf("log-probs span only [%.3f, %.3f]: the golden is too flat to test anything", lo, hi)
			}
			t.Logf("%s: max |Δ log-prob| = %.3g over %d tokens, log-probs in [%.2f, %.2f]", c.name, worst, 2*24, lo, hi)
		})
	}
}
