package stepvitals

import (
	"log/slog"
	"math"
	"strings"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/datasrc"
	"github.com/kestrel-lm/kestrel/internal/runlog"
)

// TestTokenEntropy: uniform over k tokens is ln k; one repeated token is 0
// and still measured; padding (< 0) is not counted; reset forgets.
func TestTokenEntropy(t *testing.T) {
	var e Batch
	e.reset(256)
	e.Add([]int32{1, 2, 3, 4, -1, -1})
	if got := e.nats(); math.Abs(got-math.Log(4)) > 1e-12 || e.n != 4 {
		t.Errorf("4 distinct: %v nats over %d tokens", got, e.n)
	}
	e.reset(256)
	e.Add([]int32{7, 7, 7})
	if e.nats() != 0 || e.n != 3 {
		t.Errorf("repeated: %v over %d", e.nats(), e.n)
	}
	e.reset(256)
	if e.n != 0 || e.nats() != 0 {
		t.Error("reset kept counts")
	}
}

// BenchmarkTokenEntropy is the per-step cost of batch_token_entropy on a
// demo-sized batch (16 × 256 tokens of a vocabulary of 8192).
func BenchmarkTokenEntropy(b *testing.B) {
	tg := make([]int32, 16*256)
	for i := range tg {
		tg[i] = int32(datasrc.Mix3(1, uint64(i), 0) % 8192)
	}
	var e Batch
	for b.Loop() {
		e.reset(8192)
		e.Add(tg)
		_ = e.nats()
	}
}

// testVocab is a small BPE-like vocabulary: bytes, a few merged tokens,
// a multi-byte letter and a special token.
type testVocab struct{ toks [][]byte }

func (v testVocab) Token(id int32) ([]byte, bool) {
	if id < 0 || int(id) >= len(v.toks) {
		return nil, false
	}
	return v.toks[id], true
}
func (v testVocab) Encode(string) []int32 { return nil }
func (v testVocab) IsAdded(id int32) bool { return string(v.toks[id]) == "<|endoftext|>" }

// TestBatchVitals: bytes per token, the share of non-letter bytes and the
// longest run of one token, per row (a run ends at a row's end and at
// padding), with merged tokens, a UTF-8 letter and a special token that
// counts no bytes; without a vocabulary only the run is measured.
func TestBatchVitals(t *testing.T) {
	v := testVocab{toks: [][]byte{[]byte("the"), []byte(" cat"), []byte("=="), []byte("é"), []byte("<|endoftext|>"), []byte("\n"), {0xc3}}}
	var e Batch
	e.Begin(v, len(v.toks), 4)
	// row 0: the cat == é ; row 1: == == | == pad ; row 2: <eot> \n 0xc3 0xc3
	e.Add([]int32{0, 1, 2, 3, 2, 2, 2, -1, 4, 5, 6, 6})
	var m runlog.Step
	e.Record(&m)
	bytes := 3 + 4 + 2 + 2 + 2 + 2 + 2 + 0 + 1 + 1 + 1 // 20 bytes over 11 tokens
	other := 2 + 2 + 2 + 2 + 1 + 1                     // "==" ×4, two stray 0xc3
	if !m.BatchTextMeasured || math.Abs(m.BatchBytesPerToken-float64(bytes)/11) > 1e-12 || math.Abs(m.BatchNonLetterFrac-float64(other)/float64(bytes)) > 1e-12 {
		t.Errorf("bytes/token %v (want %v), non-letter %v (want %v)", m.BatchBytesPerToken, float64(bytes)/11, m.BatchNonLetterFrac, float64(other)/float64(bytes))
	}
	if m.BatchMaxTokenRun != 3 { // "==" ×3 at the start of row 1, not 4 across rows 0-1
		t.Errorf("longest run %d, want 3", m.BatchMaxTokenRun)
	}
	if m.BatchEntropyTokens != 11 {
		t.Errorf("entropy over %d tokens, want 11", m.BatchEntropyTokens)
	}
	// A run of an unknown tokenizer: the run only.
	var e2 Batch
	e2.Begin(nil, 8, 8) // no vocabulary known
	e2.Add([]int32{1, 1, 1, 1, 1, 2, 3, 4})
	var m2 runlog.Step
	e2.Record(&m2)
	if m2.BatchTextMeasured || m2.BatchMaxTokenRun != 5 {
		t.Errorf("unknown vocabulary: measured %v, run %d", m2.BatchTextMeasured, m2.BatchMaxTokenRun)
	}
}

// TestFirstRowLogged: the first step's row 0 is decoded into the log once,
// cut at a character boundary; bytes runs decode without a tokenizer
// (internal/train's TestBase64NeedsVocab: base64_data_* without a known
// tokenizer is refused by Preflight).
func TestFirstRowLogged(t *testing.T) {
	var buf strings.Builder
	log := slog.New(slog.NewTextHandler(&buf, nil))
	text := strings.Repeat("é", 200) // 400 bytes: cut at 240
	in := make([]int32, len(text))
	for i := range len(text) {
		in[i] = int32(text[i])
	}
	var e Batch
	e.Begin(Bytes{}, 256, len(in))
	e.LogFirstRow(log, 1, 12, in)
	e.LogFirstRow(log, 2, 12, in)
	out := buf.String()
	if strings.Count(out, "first batch, row 0") != 1 || !strings.Contains(out, "bytes=400") || !strings.Contains(out, "text="+strings.Repeat("é", 120)+"…\n") || !strings.Contains(out, "shape=\"[12 400]\"") {
		t.Fatalf("log: %s", out)
	}
}

// BenchmarkBatchVitals is the per-step cost of all the batch vitals with a
// vocabulary (entropy, bytes per token, non-letter share, longest run) on
// a demo-sized batch (16 × 256 tokens of a vocabulary of 8192).
func BenchmarkBatchVitals(b *testing.B) {
	toks := make([][]byte, 8192)
	for i := range toks {
		toks[i] = []byte{byte('a' + i%26), byte(' ' + i%7), byte('0' + i%10)}
	}
	v := testVocab{toks: toks}
	tg := make([]int32, 16*256)
	for i := range tg {
		tg[i] = int32(datasrc.Mix3(1, uint64(i), 0) % 8192)
	}
	var e Batch
	var m runlog.Step
	for b.Loop() {
		e.Begin(v, len(toks), 256)
		e.Add(tg)
		e.Record(&m)
	}
}
