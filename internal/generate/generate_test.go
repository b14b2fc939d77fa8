package generate

import (
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/checkpoint"
	"github.com/kestrel-lm/kestrel/internal/config"
	"github.com/kestrel-lm/kestrel/internal/data/document"
	"github.com/kestrel-lm/kestrel/internal/datadir"
	"github.com/kestrel-lm/kestrel/internal/testrun"
	"github.com/kestrel-lm/kestrel/internal/train"
)

// tinyDataset prepares a small two-source dataset (Tiny Shakespeare and
// WikiText-2 paragraphs) under t.TempDir with a freshly trained 300-token
// BPE, as kestrel prepare would, and returns its directory.
func tinyDataset(t *testing.T) string {
	t.Helper()
	var docs []document.Doc
	for _, s := range []struct{ src, rel, sep string }{{"shakespeare", "tinyshakespeare/input.txt", "\n\n"}, {"wiki", "wikitext-2/valid.txt", "\n \n"}} {
		p, err := datadir.Path(s.rel)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, para := range strings.Split(string(raw[:min(len(raw), 60000)]), s.sep) {
			if strings.TrimSpace(para) == "" {
				continue
			}
			docs = append(docs, document.Doc{ID: fmt.Sprintf("%s:%d", s.src, n), Source: s.src, Text: para})
			n++
		}
	}
	return testrun.Dataset(t, docs, 300)
}

// tinyConfig is a small run config: vocab 256 for bytes, 320 (> the
// tokenizer's 300, as a padded vocabulary would be) for the dataset.
func tinyConfig(vocab, steps int) config.Config {
	cfg := config.Default()
	cfg.Model.Vocab, cfg.Model.DModel, cfg.Model.NLayers, cfg.Model.NHeads, cfg.Model.NKVHeads = vocab, 32, 1, 2, 2
	cfg.Model.MLPHidden, cfg.Model.SeqLen = 64, 32
	cfg.Data.MixBlock, cfg.Data.ValMaxSeqs, cfg.Data.Prefetch = 64, 8, 0
	cfg.Train.Steps, cfg.Train.BatchSize, cfg.Train.EvalEvery, cfg.Train.EvalBatches, cfg.Train.LogEvery, cfg.Train.PeakGFLOPS = steps, 4, 0, 1, 0, 10
	cfg.Optim.LR, cfg.Optim.Warmup = 3e-3, 2
	cfg.Checkpoint.Every = 0
	return cfg
}

// trainTiny trains cfg on data (a prepared dataset directory, or "" for
// Tiny Shakespeare bytes) into run and leaves its final checkpoint there.
func trainTiny(t *testing.T, cfg config.Config, data, run string) {
	t.Helper()
	testrun.Train(t, cfg, data, run, nil)
}

// TestGenerateDatasetRun: a run trained on a prepared dataset samples
// through the dataset's tokenizer: the text starts with the prompt, an
// empty prompt works, sampling is deterministic per seed, no id outside the
// tokenizer is produced, Stream receives exactly what is returned, and a
// moved dataset is a clear error naming it.
func TestGenerateDatasetRun(t *testing.T) {
	data := tinyDataset(t)
	run := filepath.Join(t.TempDir(), "run")
	trainTiny(t, tinyConfig(320, 4), data, run)

	for _, opt := range []Options{
		{Prompt: "ROMEO:", Temperature: 0, TopP: 1, Tokens: 12},
		{Prompt: "The ", Temperature: 1, TopK: 50, TopP: 0.9, Tokens: 12, EMA: true, Seed: 3},
		{Prompt: "", Temperature: 0.8, TopP: 1, Tokens: 12, Seed: 1},
	} {
		a, err := Generate(run, opt)
		if err != nil {
			t.Fatalf("%+v: %v", opt, err)
		}
		var streamed strings.Builder
		opt.Stream = &streamed
		b, err := Generate(run, opt)
		if err != nil || a != b {
			t.Fatalf("%+v: not deterministic: %q vs %q (%v)", opt, a, b, err)
		}
		if streamed.String() != a {
			t.Errorf("%+v: streamed %q, returned %q", opt, streamed.String(), a)
		}
		cont, ok := strings.CutPrefix(a, opt.Prompt)
		if !ok || cont == "" {
			t.Fatalf("%+v: %q does not continue the prompt", opt, a)
		}
		if strings.Contains(cont, "\uFFFD") { // what an unknown id decodes to
			t.Errorf("%+v: continuation %q holds an id outside the tokenizer", opt, cont)
		}
	}

	moved := data + "-moved"
	if err := os.Rename(data, moved); err != nil {
		t.Fatal(err)
	}
	_, err := Generate(run, Options{Prompt: "x", TopP: 1, Tokens: 1})
	if err == nil || !strings.Contains(err.Error(), filepath.Join(data, "tokenizer.json")) || !strings.Contains(err.Error(), "moved") {
		t.Fatalf("moved dataset: want an error naming %s, got %v", data, err)
	}
}

// TestGenerateBytesRun: byte-level runs sample bytes in, bytes out, and an
// empty prompt starts from a newline; bad settings are refused.
func TestGenerateBytesRun(t *testing.T) {
	run := filepath.Join(t.TempDir(), "run")
	trainTiny(t, tinyConfig(256, 3), "", run)
	a, err := Generate(run, Options{Prompt: "To be", Temperature: 0.8, TopK: 200, TopP: 1, Tokens: 20, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(a, "To be") || len(a) != len("To be")+20 {
		t.Fatalf("bytes sample %q: want the prompt and 20 bytes", a)
	}
	e, err := Generate(run, Options{Temperature: 0, TopP: 1, Tokens: 5})
	if err != nil || len(e) != 5 {
		t.Fatalf("empty prompt: %q %v", e, err)
	}
	for _, bad := range []Options{{TopP: 0, Tokens: 1}, {TopP: 1.5}, {TopP: 1, Temperature: -1}, {TopP: 1, TopK: -1}, {TopP: 1, Tokens: -1}} {
		if _, err := Generate(run, bad); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

// TestPickToken: temperature 0 is the argmax; top-k 1 always gives the
// argmax; top-p keeps the smallest set reaching p; the same seed gives the
// same draws.
func TestPickToken(t *testing.T) {
	logits := []float32{0.1, 3, 2.9, -1, 0}
	for _, c := range []struct {
		name    string
		temp    float64
		topK    int
		topP    float64
		allowed map[int32]bool
	}{
		{"greedy", 0, 0, 1, map[int32]bool{1: true}},
		{"top-k 1", 1, 1, 1, map[int32]bool{1: true}},
		{"top-k 2", 5, 2, 1, map[int32]bool{1: true, 2: true}},
		{"top-p small", 1, 0, 0.3, map[int32]bool{1: true}},
		{"top-p 0.9", 1, 0, 0.9, map[int32]bool{1: true, 2: true}},
		{"all", 10, 0, 1, map[int32]bool{0: true, 1: true, 2: true, 3: true, 4: true}},
	} {
		rng := rand.New(rand.NewPCG(1, 2))
		seen := map[int32]bool{}
		for i := 0; i < 400; i++ {
			id := PickToken(logits, c.temp, c.topK, c.topP, rng)
			if !c.allowed[id] {
				t.Fatalf("%s: picked %d", c.name, id)
			}
			seen[id] = true
		}
		if len(seen) != len(c.allowed) {
			t.Errorf("%s: picked %v, want every one of %v", c.name, seen, c.allowed)
		}
	}
	r1, r2 := rand.New(rand.NewPCG(7, 7)), rand.New(rand.NewPCG(7, 7))
	for i := 0; i < 50; i++ {
		if a, b := PickToken(logits, 1, 0, 1, r1), PickToken(logits, 1, 0, 1, r2); a != b {
			t.Fatalf("draw %d: %d vs %d with the same seed", i, a, b)
		}
	}
}

// TestCodecFor: bytes runs round-trip any byte string; a run naming no
// tokenizer with a non-byte vocabulary is an error.
func TestCodecFor(t *testing.T) {
	var st checkpoint.State
	st.Tokenizer, st.Model.Vocab = "bytes", 256
	c, err := CodecFor("r", st)
	if err != nil {
		t.Fatal(err)
	}
	s := "a\xff\n"
	ids, _ := c.Encode(s)
	if got := c.Decode(ids); got != s || len(ids) != 3 || c.Start[0] != '\n' {
		t.Fatalf("bytes codec: %q → %v → %q", s, ids, got)
	}
	st.Tokenizer, st.Model.Vocab = "", 512
	if _, err := CodecFor("r", st); err == nil || !strings.Contains(err.Error(), "512") {
		t.Fatalf("no tokenizer: %v", err)
	}
}

// pickTokenSortAll is the reference PickToken: a stable sort of the whole
// vocabulary by logit, then top-k, top-p and one draw.
func pickTokenSortAll(logits []float32, temperature float64, topK int, topP float64, rng *rand.Rand) int32 {
	best := 0
	for i, v := range logits {
		if v > logits[best] {
			best = i
		}
	}
	if temperature == 0 {
		return int32(best)
	}
	idx := make([]int, len(logits))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return logits[idx[a]] > logits[idx[b]] })
	if topK > 0 && topK < len(idx) {
		idx = idx[:topK]
	}
	p := make([]float64, len(idx))
	var z float64
	for i, j := range idx {
		p[i] = math.Exp((float64(logits[j]) - float64(logits[idx[0]])) / temperature)
		z += p[i]
	}
	cum := 0.0
	for i := range p {
		p[i] /= z
		cum += p[i]
		if cum >= topP {
			p, idx = p[:i+1], idx[:i+1]
			break
		}
	}
	z = 0
	for _, v := range p {
		z += v
	}
	r := rng.Float64() * z
	for i, v := range p {
		r -= v
		if r <= 0 {
			return int32(idx[i])
		}
	}
	return int32(idx[len(idx)-1])
}

// TestPickerMatchesSortAll: the heap-based top-k and the reused scratch
// draw exactly the tokens a stable sort of the whole vocabulary draws, ties
// (quantised logits) and -Inf (masked ids) included.
func TestPickerMatchesSortAll(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	var pk Picker
	for trial := 0; trial < 200; trial++ {
		V := 1 + r.IntN(600)
		logits := make([]float32, V)
		for i := range logits {
			logits[i] = float32(math.Round(r.NormFloat64()*4)) / 2 // many ties
			if r.IntN(20) == 0 {
				logits[i] = float32(math.Inf(-1))
			}
		}
		logits[r.IntN(V)] = 3
		temp := []float64{0, 0.5, 1, 2}[r.IntN(4)]
		topK := []int{0, 1, 5, 50, 200, V, V + 3}[r.IntN(7)]
		topP := []float64{1, 0.9, 0.5, 0.1}[r.IntN(4)]
		seed := r.Uint64()
		r1, r2 := rand.New(rand.NewPCG(seed, 1)), rand.New(rand.NewPCG(seed, 1))
		for d := 0; d < 20; d++ {
			got, want := pk.Pick(logits, temp, topK, topP, r1), pickTokenSortAll(logits, temp, topK, topP, r2)
			if got != want {
				t.Fatalf("trial %d (V=%d T=%g k=%d p=%g) draw %d: Picker %d, sort-all %d", trial, V, temp, topK, topP, d, got, want)
			}
		}
	}
}

// TestGenerateKVCacheMatchesRecompute: Generate (KV cache, context shifted
// to its newest seq_len/2 tokens when full) draws the same bytes as a full
// forward pass (model.Logits) over the same context for every token, within
// seq_len and past it.
func TestGenerateKVCacheMatchesRecompute(t *testing.T) {
	run := filepath.Join(t.TempDir(), "run")
	cfg := tinyConfig(256, 3)
	trainTiny(t, cfg, "", run)
	m, _, err := train.LoadModel(run, false, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	T := cfg.Model.SeqLen
	for _, n := range []int{20, 3 * T} {
		opt := Options{Prompt: "To be", Temperature: 0.8, TopK: 40, TopP: 0.95, Tokens: n, Seed: 5}
		got, err := Generate(run, opt)
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(opt.Seed, opt.Seed^0x5eed))
		ctx := []int32{'T', 'o', ' ', 'b', 'e'}
		start := 0
		logits := make([]float32, 256)
		want := []byte(opt.Prompt)
		for i := 0; i < n; i++ {
			if len(ctx)-start > T {
				start = len(ctx) - T/2
			}
			if err := m.Logits(ctx[start:], logits); err != nil {
				t.Fatal(err)
			}
			next := PickToken(logits, opt.Temperature, opt.TopK, opt.TopP, rng)
			ctx = append(ctx, next)
			want = append(want, byte(next))
		}
		if got != string(want) {
			t.Fatalf("%d tokens: KV cache %q, recompute %q", n, got, want)
		}
	}
}
