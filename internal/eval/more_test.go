package eval

import (
	"context"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/datasrc"
	"github.com/kestrel-lm/kestrel/internal/openrun"

	"github.com/kestrel-lm/kestrel/internal/config"
	"github.com/kestrel-lm/kestrel/internal/datadir"
	"github.com/kestrel-lm/kestrel/internal/generate"
	"github.com/kestrel-lm/kestrel/internal/train"
)

func TestReadGSM8K(t *testing.T) {
	p, err := datadir.Path("gsm8k/test.jsonl")
	if err != nil {
		t.Skip(err)
	}
	items, err := ReadGSM8K(p, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != 1319 || !strings.HasPrefix(items[0].Question, "Janet") || !strings.HasSuffix(items[0].Answer, "#### 18") {
		t.Fatalf("got %d items, first %+v", len(items), items[0])
	}
	if items, _ := ReadGSM8K(p, 5); len(items) != 5 {
		t.Fatalf("limit 5: %d items", len(items))
	}
	for _, tc := range []struct{ name, body, want string }{
		{"json", "{\"question\":\"a\",\"answer\":\"b\"}\n{oops\n", "bad.jsonl:2:"},
		{"no answer", "{\"question\":\"a\"}\n", "bad.jsonl:1: want the fields question and answer"},
		{"empty answer", "\n{\"question\":\"a\",\"answer\":\"\"}\n", "bad.jsonl:2:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := filepath.Join(t.TempDir(), "bad.jsonl")
			os.WriteFile(bad, []byte(tc.body), 0o644)
			_, err := ReadGSM8K(bad, 0)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
}

// TestGSM8KNLLManual: the task's number is the mean of −log p / bytes of
// each item scored by hand, and its standard error that of those values.
func TestGSM8KNLLManual(t *testing.T) {
	s, _ := tinyModel(t)
	items := []GSMItem{{"What is 2+2?", "2+2=4\n#### 4"}, {"Half of 10?", "10/2=5\n#### 5"}, {"x", "1"}}
	r, err := s.GSM8KNLL(items)
	if err != nil {
		t.Fatal(err)
	}
	var per []float64
	for _, it := range items {
		sc, err := s.Score("Question: "+it.Question+"\nAnswer:", " "+it.Answer)
		if err != nil {
			t.Fatal(err)
		}
		per = append(per, -sc.LogProb/float64(len(it.Answer)+1))
	}
	mean := (per[0] + per[1] + per[2]) / 3
	v := 0.0
	for _, x := range per {
		v += (x - mean) * (x - mean)
	}
	se := math.Sqrt(v / 2 / 3)
	if r.N != 3 || !near(r.NatsPerB, mean, 1e-9) || !near(r.StderrNats, se, 1e-9) || !near(r.BitsPerB, mean/math.Ln2, 1e-9) || r.Truncated != 0 {
		t.Fatalf("got %+v, want mean %v se %v", r, mean, se)
	}
}

func TestOverlap(t *testing.T) {
	for _, tc := range []struct {
		got, want []int32
		exact     bool
		frac      float64
	}{
		{[]int32{1, 2, 3, 4}, []int32{1, 2, 3, 4}, true, 1},
		{[]int32{1, 9, 3, 9}, []int32{1, 2, 3, 4}, false, 0.5},
		{[]int32{2, 3, 4, 5}, []int32{1, 2, 3, 4}, false, 0}, // shifted: positions differ
		{[]int32{1, 2}, []int32{1, 2, 3, 4}, false, 0.5},     // short
		{nil, nil, true, 1},
	} {
		ex, f := Overlap(tc.got, tc.want)
		if ex != tc.exact || f != tc.frac {
			t.Errorf("Overlap(%v, %v) = %v, %v; want %v, %v", tc.got, tc.want, ex, f, tc.exact, tc.frac)
		}
	}
	if got := Spaced(10, 4); len(got) != 4 || got[0] != 0 || got[1] != 2 || got[3] != 7 {
		t.Fatalf("Spaced(10,4) = %v", got)
	}
	if got := Spaced(3, 10); len(got) != 3 {
		t.Fatalf("Spaced(3,10) = %v", got)
	}
}

// TestMemLengths: memorization's prompt and continuation fit in the
// model's context (one training window), 64 + 64 from seq_len 128 up.
func TestMemLengths(t *testing.T) {
	for _, c := range []struct{ seqLen, pre, cont int }{
		{1, 1, 1}, {2, 1, 1}, {3, 1, 2}, {32, 16, 16}, {64, 32, 32}, {65, 32, 33},
		{127, 63, 64}, {128, 64, 64}, {256, 64, 64}, {4096, 64, 64},
	} {
		pre, cont := MemLengths(c.seqLen)
		if pre != c.pre || cont != c.cont {
			t.Errorf("MemLengths(%d) = %d, %d, want %d, %d", c.seqLen, pre, cont, c.pre, c.cont)
		}
		if c.seqLen >= 2 && pre+cont > c.seqLen {
			t.Errorf("MemLengths(%d) = %d + %d, past the context", c.seqLen, pre, cont)
		}
	}
}

// TestMemorization trains a tiny byte model on one short text repeated
// until it memorizes it, then checks that greedy decoding reproduces
// windows of that text better than windows of unseen text, and that
// Greedy (the KV-cache decoder) agrees with recomputing the context.
func TestMemorization(t *testing.T) {
	dir := t.TempDir()
	cfg := config.Default()
	cfg.Model.Vocab, cfg.Model.DModel, cfg.Model.NLayers, cfg.Model.NHeads, cfg.Model.NKVHeads = 256, 32, 1, 2, 2
	cfg.Model.MLPHidden, cfg.Model.SeqLen = 64, 32
	cfg.Train.Steps, cfg.Train.BatchSize, cfg.Train.EvalEvery, cfg.Train.EvalBatches, cfg.Train.LogEvery, cfg.Train.PeakGFLOPS = 60, 8, 0, 1, 0, 10
	cfg.Optim.LR, cfg.Optim.Warmup = 2e-2, 2
	cfg.Checkpoint.Every = 0
	phrase := "the quick brown fox jumps over the lazy dog; "
	trainText := []byte(strings.Repeat(phrase, 60))
	valText := []byte(strings.Repeat("Pack my box with five dozen liquor jugs! ", 20))
	_, err := train.Run(context.Background(), train.Options{Dir: filepath.Join(dir, "run"), Seed: 1, Model: cfg.Model, Optim: cfg.Optim,
		Train: cfg.Train, Checkpoint: cfg.Checkpoint, Init: cfg.Init, Debug: cfg.Debug, Data: datasrc.NewBytesSource(trainText, valText, 32, 1),
		Tokenizer: "bytes", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	m, _, err := train.LoadModel(filepath.Join(dir, "run"), false, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	s := &Scorer{Model: m, Codec: generate.BytesCodec(), Batch: 4}
	d := &runData{&openrun.Data{Train: trainText, Val: valText}}
	const pre, n = 16, 24 // the context slides past seq_len 32
	tr, err := d.memDocs("train", 6, pre+n)
	if err != nil {
		t.Fatal(err)
	}
	va, err := d.memDocs("val", 6, pre+n)
	if err != nil {
		t.Fatal(err)
	}
	mt, err := s.Memorize("train", tr, pre)
	if err != nil {
		t.Fatal(err)
	}
	mv, err := s.Memorize("val", va, pre)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("train %+v held-out %+v", mt, mv)
	if !(mt.ExactMatch > mv.ExactMatch && mt.Overlap > mv.Overlap+0.3) {
		t.Fatalf("memorized text not reproduced better than held-out: train %+v, held-out %+v", mt, mv)
	}
	// the KV-cache decoder = recomputing the whole (last seq_len) context
	// with model.Logits at every token, past the cache's end too
	prefixes := [][]int32{tr[0][:pre], va[1][:pre], tr[2][:pre-3]}
	got, err := s.Greedy(prefixes, n)
	if err != nil {
		t.Fatal(err)
	}
	row := make([]float32, m.Cfg.Vocab)
	for i, p := range prefixes {
		ctx := append([]int32(nil), p...)
		for range n {
			if err := m.Logits(ctx[max(0, len(ctx)-m.Cfg.SeqLen):], row); err != nil {
				t.Fatal(err)
			}
			arg := 0
			for v := range row {
				if row[v] > row[arg] {
					arg = v
				}
			}
			ctx = append(ctx, int32(arg))
		}
		if _, f := Overlap(got[i], ctx[len(p):]); f != 1 {
			t.Fatalf("prefix %d: decoder %v, full recompute %v", i, got[i], ctx[len(p):])
		}
	}
}

// TestTokensNLLMatchesTextNLL: bpb-val's token-level scoring equals the
// text scorer on the same tokens, whole and limited to some windows.
func TestTokensNLLMatchesTextNLL(t *testing.T) {
	s, _ := tinyModel(t)
	text := strings.Repeat("To be, or not to be, that is the question: ", 5)
	for _, w := range []int{0, 1, 3} {
		want, err := s.TextNLL(text, w)
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.TokensNLL(bytesOf(text), w)
		if err != nil {
			t.Fatal(err)
		}
		if got.Tokens != want.Tokens || got.Bytes != want.Bytes || !near(got.Nats, want.Nats, 1e-12) {
			t.Fatalf("windows %d: TokensNLL %+v, TextNLL %+v", w, got, want)
		}
	}
}
