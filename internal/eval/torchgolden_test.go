package eval

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/checkpoint"

	"github.com/kestrel-lm/kestrel/internal/generate"
	"github.com/kestrel-lm/kestrel/internal/model"
	"github.com/kestrel-lm/kestrel/internal/safetensors"
)

// Goldens from the independent PyTorch scorer (tools/torchref/eval_ref.py):
//
//	go test ./internal/eval -run TestTorchGoldens -write-torch-eval DIR
//	/usr/bin/python3 tools/torchref/eval_ref.py DIR internal/eval/testdata/torch_eval_requests.jsonl \
//	    --dtype float64 --out internal/eval/testdata/torch_eval_golden.json
//	go test ./internal/eval -run TestTorchGoldens
//
// The first writes the model (config.json, model.safetensors: a seeded
// random byte-level model) into DIR and the requests kestrel scores; the
// script rescores them in float64; the test (all CI runs) rebuilds the
// same model, checks that the requests are still tokenised the same way,
// and compares every log-probability and every chosen answer.
var writeTorchEval = flag.String("write-torch-eval", "", "write the golden model to this directory and testdata/torch_eval_requests.jsonl")

// goldenModel is the seeded model of the goldens: GQA, QK-norm, tied
// embeddings, init std 0.2 so that choices are far from ties.
func goldenModel(t *testing.T) *model.Model {
	t.Helper()
	cfg := model.Config{Vocab: 256, DModel: 48, NLayers: 2, NHeads: 4, NKVHeads: 2, MLPHidden: 96,
		SeqLen: 96, RopeTheta: 10000, NormEps: 1e-5, QKNorm: true, Tied: true, InitStd: 0.2}
	m, err := model.New(cfg, 7)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func goldenItems(t *testing.T) map[string][]Item {
	t.Helper()
	out := map[string][]Item{}
	for _, task := range []string{"hellaswag", "piqa"} {
		files, err := TaskFiles(task)
		if err != nil {
			t.Fatal(err)
		}
		if task == "hellaswag" {
			out[task], err = ReadHellaSwag(files[0], 6)
		} else {
			out[task], err = ReadPIQA(files[0], files[1], 6)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func TestTorchGoldens(t *testing.T) {
	m := goldenModel(t)
	var dump bytes.Buffer
	s := &Scorer{Model: m, Codec: generate.BytesCodec(), Batch: 5, Dump: &dump}
	items := goldenItems(t)
	choices := map[string][]Choice{}
	for _, task := range []string{"hellaswag", "piqa"} {
		s.Task = task
		ch, err := s.Choose(items[task])
		if err != nil {
			t.Fatal(err)
		}
		choices[task] = ch
	}
	reqPath := filepath.Join("testdata", "torch_eval_requests.jsonl")
	if dir := *writeTorchEval; dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		var ts []safetensors.Tensor
		for _, x := range m.Tensors() {
			ts = append(ts, safetensors.FromFloat32(x.Name, x.Shape, m.Params[x.Offset:x.Offset+x.Size]))
		}
		if err := safetensors.WriteFile(filepath.Join(dir, "model.safetensors"), ts, nil); err != nil {
			t.Fatal(err)
		}
		hf, _ := json.MarshalIndent(checkpoint.HFConfig(m.Cfg), "", "  ")
		if err := os.WriteFile(filepath.Join(dir, "config.json"), hf, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(reqPath, dump.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s and %s: now run tools/torchref/eval_ref.py", dir, reqPath)
		return
	}
	want, err := os.ReadFile(reqPath)
	if err != nil {
		t.Fatal(err)
	}
	var golden struct {
		Torch    string    `json:"torch"`
		DType    string    `json:"dtype"`
		LogProbs []float64 `json:"logprobs"`
	}
	b, err := os.ReadFile(filepath.Join("testdata", "torch_eval_golden.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &golden); err != nil {
		t.Fatal(err)
	}
	var got, committed []DumpLine
	for _, src := range []struct {
		b   []byte
		dst *[]DumpLine
	}{{dump.Bytes(), &got}, {want, &committed}} {
		sc := bufio.NewScanner(bytes.NewReader(src.b))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var l DumpLine
			if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
				t.Fatal(err)
			}
			*src.dst = append(*src.dst, l)
		}
	}
	if len(got) != len(committed) || len(golden.LogProbs) != len(committed) {
		t.Fatalf("%d requests scored, %d committed, %d golden log-probabilities", len(got), len(committed), len(golden.LogProbs))
	}
	var maxDiff float64
	for i, g := range got {
		c := committed[i]
		if g.Task != c.Task || g.Item != c.Item || g.Choice != c.Choice || g.Cont != c.Cont || g.Bytes != c.Bytes || !slices.Equal(g.Tokens, c.Tokens) {
			t.Fatalf("request %d is tokenised differently from the committed one: %+v vs %+v", i, g, c)
		}
		d := math.Abs(g.LogProb - golden.LogProbs[i])
		maxDiff = max(maxDiff, d)
		if d > 1e-4*math.Max(1, math.Abs(golden.LogProbs[i])) {
			t.Errorf("request %d (%s item %d choice %d): kestrel %.7f, torch %.7f", i, g.Task, g.Item, g.Choice, g.LogProb, golden.LogProbs[i])
		}
	}
	// the chosen answers from torch's log-probabilities are kestrel's
	k := 0
	for _, task := range []string{"hellaswag", "piqa"} {
		for i, it := range items[task] {
			sc := make([]Score, len(it.Choices))
			for j := range sc {
				sc[j] = Score{LogProb: golden.LogProbs[k], Bytes: committed[k].Bytes}
				k++
			}
			tc, kc := Pick(sc), choices[task][i]
			if tc.Acc != kc.Acc || tc.AccNorm != kc.AccNorm {
				t.Errorf("%s item %d: torch picks %d/%d (acc/acc_norm), kestrel %d/%d", task, i, tc.Acc, tc.AccNorm, kc.Acc, kc.AccNorm)
			}
		}
	}
	t.Logf("%d requests, max |Δ logprob| = %.2g (torch %s %s)", len(got), maxDiff, golden.Torch, golden.DType)
}
