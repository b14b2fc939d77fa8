package stepvitals

import (
	"log/slog"
	"math"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/kestrel-lm/kestrel/internal/runlog"
)

// The batch's data vitals, measured on the tokens the model trains on
// (after the [debug] data faults) at little cost: one pass over the
// targets with per-token tables built once. The monitor judges them
// against the run's window (batch_anomaly, garbage_batch).

// Vocabulary is what the trainer knows of the run's tokenizer: the bytes
// a token id decodes to and the encoder (*tokenizer.Tokenizer has both).
// A vocabulary that also has IsAdded(id) bool marks its special tokens,
// which count no bytes.
type Vocabulary interface {
	Token(id int32) ([]byte, bool)
	Encode(text string) []int32
}

// Bytes is the vocabulary of byte-level runs: id b is the byte b.
type Bytes struct{}

// Token is the byte id, for ids 0…255.
func (Bytes) Token(id int32) ([]byte, bool) {
	if id < 0 || id > 255 {
		return nil, false
	}
	return []byte{byte(id)}, true
}

// Encode maps each byte of text to its id.
func (Bytes) Encode(text string) []int32 {
	out := make([]int32, len(text))
	for i := 0; i < len(text); i++ {
		out[i] = int32(text[i])
	}
	return out
}

// vocabTable holds, per token id, the bytes it decodes to and how many of
// them are neither letters nor whitespace.
type vocabTable struct {
	nbytes, other []uint16
}

// newVocabTable tabulates the first n ids of v. A letter or mark (UTF-8,
// all its bytes) and whitespace are text; digits, punctuation, symbols,
// control characters and bytes that are not whole UTF-8 characters (a
// byte-level token above 0x7f) are "other". Special tokens count nothing.
func newVocabTable(v Vocabulary, n int) *vocabTable {
	added, _ := v.(interface{ IsAdded(int32) bool })
	t := &vocabTable{nbytes: make([]uint16, n), other: make([]uint16, n)}
	for id := range n {
		b, ok := v.Token(int32(id))
		if !ok || added != nil && added.IsAdded(int32(id)) {
			continue
		}
		t.nbytes[id] = uint16(min(len(b), math.MaxUint16))
		other := 0
		for i := 0; i < len(b); {
			r, size := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && size <= 1 || !(unicode.IsLetter(r) || unicode.IsMark(r) || unicode.IsSpace(r)) {
				other += max(size, 1)
			}
			i += max(size, 1)
		}
		t.other[id] = uint16(min(other, math.MaxUint16))
	}
	return t
}

// Batch accumulates one step's batch vitals over its micro-batches:
// the unigram histogram of the target tokens for batch_token_entropy (a
// count array reused across steps, only the touched entries reset), the
// longest run of one token in a row, and with a vocabulary the bytes and
// non-letter bytes the targets decode to.
type Batch struct {
	counts  []int32
	touched []int32
	n       int

	rowLen       int         // T; 0 = the targets are one row
	tab          *vocabTable // nil = vocabulary unknown
	tabDone      bool
	bytes, other int64
	maxRun       int
	logged       bool // row 0 of this invocation's first batch is in the log
	vocab        Vocabulary
}

func (e *Batch) reset(vocab int) {
	if len(e.counts) != vocab {
		e.counts = make([]int32, vocab)
	}
	for _, t := range e.touched {
		e.counts[t] = 0
	}
	e.touched, e.n = e.touched[:0], 0
	e.bytes, e.other, e.maxRun = 0, 0, 0
}

// Begin starts a step of a run with vocabulary v (nil: unknown) of vocab
// ids and rows of T tokens; the vocabulary's table is built at the first step.
func (e *Batch) Begin(v Vocabulary, vocab, T int) {
	e.reset(vocab)
	e.rowLen = T
	if !e.tabDone {
		e.tabDone = true
		if e.vocab = v; e.vocab != nil {
			e.tab = newVocabTable(e.vocab, vocab)
		}
	}
}

// Add counts the targets ≥ 0 (positions with a loss); a run of one token
// ends at a row's end and at padding.
func (e *Batch) Add(tg []int32) {
	run, prev := 0, int32(-1)
	for i, t := range tg {
		if e.rowLen > 0 && i%e.rowLen == 0 {
			run, prev = 0, -1
		}
		if t < 0 || int(t) >= len(e.counts) {
			run, prev = 0, -1
			continue
		}
		if e.counts[t] == 0 {
			e.touched = append(e.touched, t)
		}
		e.counts[t]++
		e.n++
		if t == prev {
			run++
		} else {
			run, prev = 1, t
		}
		e.maxRun = max(e.maxRun, run)
		if e.tab != nil {
			e.bytes += int64(e.tab.nbytes[t])
			e.other += int64(e.tab.other[t])
		}
	}
}

// nats is the entropy of the histogram, 0 when it is empty.
func (e *Batch) nats() float64 {
	if e.n == 0 {
		return 0
	}
	n := float64(e.n)
	var h float64
	for _, t := range e.touched {
		p := float64(e.counts[t]) / n
		h -= p * math.Log(p)
	}
	return h
}

// Record writes the step's batch vitals into its metrics line.
func (e *Batch) Record(m *runlog.Step) {
	m.BatchTokenEntropy, m.BatchEntropyTokens = e.nats(), e.n // this rank's rows
	m.BatchMaxTokenRun = e.maxRun
	if e.tab != nil && e.n > 0 && e.bytes > 0 {
		m.BatchTextMeasured = true
		m.BatchBytesPerToken = float64(e.bytes) / float64(e.n)
		m.BatchNonLetterFrac = float64(e.other) / float64(e.bytes)
	}
}

// firstRowBytes bounds the decoded text of the first row in the log.
const firstRowBytes = 240

// LogFirstRow writes row 0 of the first batch this invocation trains
// (inputs, after the data faults), decoded, to the log once: seed 000's
// first check that the pipeline feeds text, not garbage, zeros or empty
// strings, before anyone reads a loss.
func (e *Batch) LogFirstRow(log *slog.Logger, step, batch int, in []int32) {
	if e.logged || e.rowLen <= 0 || len(in) < e.rowLen {
		return
	}
	e.logged = true
	row := in[:e.rowLen]
	lo, hi := row[0], row[0]
	for _, t := range in {
		lo, hi = min(lo, t), max(hi, t)
	}
	attrs := []any{"step", step, "shape", [2]int{batch, e.rowLen}, "token_min", lo, "token_max", hi}
	if e.vocab == nil {
		log.Info("first batch, row 0 (no tokenizer known: ids)", append(attrs, "ids", row[:min(len(row), 32)])...)
		return
	}
	var b strings.Builder
	for _, t := range row {
		tok, ok := e.vocab.Token(t)
		if !ok {
			tok = []byte("\uFFFD")
		}
		b.Write(tok)
	}
	text, total := b.String(), b.Len()
	if total > firstRowBytes {
		cut := firstRowBytes
		for cut > 0 && !utf8.RuneStart(text[cut]) {
			cut--
		}
		text = text[:cut] + "…"
	}
	log.Info("first batch, row 0 decoded: read it before trusting a loss", append(attrs, "bytes", total, "text", text)...)
}
