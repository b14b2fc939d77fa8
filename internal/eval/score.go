// Package eval measures a trained model on benchmarks: zero-shot multiple
// choice (HellaSwag, PIQA) by log-likelihood, and bits per byte on held-out
// text. It loads a run's checkpoint through internal/train and maps text to
// token ids with the run's codec (internal/generate: bytes, or the prepared
// dataset's tokenizer).
//
// # Tokenisation (as lm-evaluation-harness does it)
//
// A request is a context and a continuation. Both are encoded separately
// (the continuation keeps its leading space, e.g. " ending") and the ids are
// concatenated; an empty context is replaced by the codec's start token (the
// harness's end-of-text prefix). The model reads the concatenation shifted by
// one and the log-probabilities of the continuation's tokens are summed.
// When context + continuation exceed seq_len + 1 tokens, the rightmost
// seq_len + 1 are kept: the context loses its leftmost tokens (a continuation
// longer than seq_len loses its first tokens too, which are then not scored;
// Score.Tokens says how many were).
//
// # Multiple choice
//
// Each choice of an item is scored after the item's context. acc picks the
// choice with the highest summed log-probability; acc_norm the highest
// log-probability divided by the choice's length in bytes, not counting the
// leading space (the harness divides by the length in characters of the
// choice it appends after the " " delimiter; the same for ASCII text). Ties go to the
// first choice. Standard errors are sqrt(p(1−p)/(n−1)), the harness's sample
// standard error of the mean.
//
// # Bits per byte
//
// The text is encoded whole, the codec's start token is put in front, and the
// ids are cut into non-overlapping windows of seq_len predictions, so every
// token of the text is predicted exactly once (tokens early in a window see
// little context, which makes the number slightly pessimistic next to a
// sliding window). bpb = Σ NLL (nats) / (ln 2 × bytes of the text). It does
// not depend on the tokenizer, so runs with different vocabularies compare.
//
// # GSM8K, memorization, validation bits per byte
//
// GSM8KNLL scores the gold answer " {answer}" after "Question:
// {question}\nAnswer:" and averages −log p / bytes over items. Memorize
// greedy-decodes (Greedy) the continuation of a document's first tokens and
// compares it with the true one (Overlap); Run takes the documents from the
// run's own training and held-out data (the prepared dataset's streams, or
// the byte-level text of its config.toml). bpb-val scores each source's
// validation stream with TokensNLL, which is TextNLL on given tokens.
//
// # Cost
//
// Scoring uses model.LogProbs, a forward-only pass: no activations are kept
// for a backward pass, no gradient is touched, and the final norm, lm_head
// and log-softmax run only at the scored positions (the continuations), not
// at every context position. Greedy decoding uses the model's KV-cache
// Decoder: a prefix is read once, then one token per step.
package eval

import (
	"context"
	"fmt"
	"io"
	"math"
	"sort"

	"github.com/kestrel-lm/kestrel/internal/generate"
	"github.com/kestrel-lm/kestrel/internal/model"
)

// Request is one continuation to score after a context.
type Request struct {
	Context, Continuation string
}

// Score is the log-likelihood of one request's continuation.
type Score struct {
	LogProb float64 // Σ ln p(token | preceding tokens) over the scored continuation tokens
	Tokens  int     // continuation tokens scored
	Bytes   int     // bytes of the continuation text
}

// Scorer scores requests with one model and codec. It is not safe for
// concurrent use (the model is not).
type Scorer struct {
	Model *model.Model
	Codec generate.Codec
	// Batch is the number of sequences per forward (default 32).
	Batch int
	// Ctx, when set, stops scoring between forwards once it is cancelled.
	Ctx context.Context
	// Dump, when set, receives every multiple-choice request Choose scores
	// as a JSON line (DumpLine) for an independent scorer.
	Dump io.Writer
	// Task names the task in Dump's lines.
	Task string

	lp []float32 // LogProbs' output, reused
}

// DumpLine is one scored request as Choose dumps it: the window of token
// ids the model read (context then continuation, left-truncated to
// seq_len + 1), how many of its last tokens are the scored continuation,
// the continuation's bytes (acc_norm's divisor) and kestrel's summed
// log-probability. tools/torchref/eval_ref.py rescoring these lines is the
// independent check of kestrel's evaluation.
type DumpLine struct {
	Task    string  `json:"task"`
	Item    int     `json:"item"`
	Choice  int     `json:"choice"`
	Label   int     `json:"label"`
	Tokens  []int32 `json:"tokens"`
	Cont    int     `json:"cont"`
	Bytes   int     `json:"bytes"`
	LogProb float64 `json:"logprob"`
}

// seq is one window to run: its inputs and the positions of the
// continuation targets at its end.
type seq struct {
	req    int
	tokens []int32 // inputs followed by the last target: len = inputs + 1
	cont   int     // targets scored: the last cont of tokens[1:]
}

// window builds the harness's window of a request.
func (s *Scorer) window(r Request) (tokens []int32, cont int, err error) {
	ctx, err := s.Codec.Encode(r.Context)
	if err != nil {
		return nil, 0, fmt.Errorf("encode context: %w", err)
	}
	c, err := s.Codec.Encode(r.Continuation)
	if err != nil {
		return nil, 0, fmt.Errorf("encode continuation: %w", err)
	}
	if len(c) == 0 {
		return nil, 0, fmt.Errorf("continuation %q encodes to no tokens", r.Continuation)
	}
	if len(ctx) == 0 {
		ctx = s.Codec.Start
	}
	all := append(append(make([]int32, 0, len(ctx)+len(c)), ctx...), c...)
	T := s.Model.Cfg.SeqLen
	if len(all) > T+1 {
		all = all[len(all)-(T+1):]
	}
	return all, min(len(c), len(all)-1), nil
}

// Score returns the log-likelihood of continuation after context.
func (s *Scorer) Score(context, continuation string) (Score, error) {
	out, err := s.ScoreAll([]Request{{context, continuation}})
	if err != nil {
		return Score{}, err
	}
	return out[0], nil
}

// ScoreAll scores every request, several per forward: the windows are
// sorted by length and run Batch at a time, padded on the right to the
// longest of the batch (causal attention: padding after a sequence does not
// change it).
func (s *Scorer) ScoreAll(reqs []Request) ([]Score, error) {
	seqs := make([]seq, len(reqs))
	out := make([]Score, len(reqs))
	for i, r := range reqs {
		toks, cont, err := s.window(r)
		if err != nil {
			return nil, fmt.Errorf("request %d: %w", i, err)
		}
		seqs[i] = seq{req: i, tokens: toks, cont: cont}
		out[i].Tokens, out[i].Bytes = cont, len(r.Continuation)
	}
	sort.SliceStable(seqs, func(a, b int) bool { return len(seqs[a].tokens) > len(seqs[b].tokens) })
	if err := s.forwardAll(seqs, func(sq seq, lps []float64) { out[sq.req].LogProb = sum(lps) }); err != nil {
		return nil, err
	}
	return out, nil
}

// batch is the number of sequences per forward.
func (s *Scorer) batch() int {
	if s.Batch <= 0 {
		return 32
	}
	return s.Batch
}

// forwardAll runs seqs through the model batch() at a time and hands fn
// each sequence with the log-probabilities (natural log) of its last cont
// targets, in order. lps is reused: copy it to keep it.
func (s *Scorer) forwardAll(seqs []seq, fn func(sq seq, lps []float64)) error {
	bs := s.batch()
	for lo := 0; lo < len(seqs); lo += bs {
		if s.Ctx != nil && s.Ctx.Err() != nil {
			return s.Ctx.Err()
		}
		chunk := seqs[lo:min(lo+bs, len(seqs))]
		lps, err := s.forward(chunk)
		if err != nil {
			return err
		}
		for j, sq := range chunk {
			fn(sq, lps[j])
		}
	}
	return nil
}

// sum is Σ xs.
func sum(xs []float64) float64 {
	var t float64
	for _, x := range xs {
		t += x
	}
	return t
}

// forward runs one batch and returns, per sequence, the log-probabilities
// of its last cont targets.
func (s *Scorer) forward(chunk []seq) ([][]float64, error) {
	T := 0
	for _, sq := range chunk {
		T = max(T, len(sq.tokens)-1)
	}
	B := len(chunk)
	b := model.Batch{B: B, T: T, Inputs: make([]int32, B*T), Targets: make([]int32, B*T)}
	for i := range b.Targets {
		b.Targets[i] = -1
	}
	for j, sq := range chunk {
		n := len(sq.tokens) - 1
		copy(b.Inputs[j*T:], sq.tokens[:n])
		for p := n - sq.cont; p < n; p++ {
			b.Targets[j*T+p] = sq.tokens[p+1]
		}
	}
	if cap(s.lp) < B*T {
		s.lp = make([]float32, B*T)
	}
	lps := s.lp[:B*T]
	if err := s.Model.LogProbs(&b, lps); err != nil {
		return nil, fmt.Errorf("eval forward: %w", err)
	}
	out := make([][]float64, B)
	for j, sq := range chunk {
		n := len(sq.tokens) - 1
		lp := make([]float64, 0, sq.cont)
		for p := n - sq.cont; p < n; p++ {
			lp = append(lp, float64(lps[j*T+p]))
		}
		out[j] = lp
	}
	return out, nil
}

// NLL is the summed negative log-likelihood of a text.
type NLL struct {
	Nats   float64 // Σ −ln p over every token of the text
	Tokens int     // tokens predicted
	Bytes  int     // bytes of the text
}

// BitsPerByte is Nats / (ln 2 × Bytes).
func (n NLL) BitsPerByte() float64 { return n.Nats / (math.Ln2 * float64(n.Bytes)) }

// TextNLL encodes text, puts the codec's start token in front and sums the
// NLL of every token in non-overlapping windows of seq_len predictions. With
// maxWindows > 0 only the first maxWindows windows are scored and Bytes is
// the length of the text they cover (decoded).
func (s *Scorer) TextNLL(text string, maxWindows int) (NLL, error) {
	ids, err := s.Codec.Encode(text)
	if err != nil {
		return NLL{}, fmt.Errorf("encode text: %w", err)
	}
	if len(ids) == 0 {
		return NLL{}, fmt.Errorf("text encodes to no tokens")
	}
	res, err := s.TokensNLL(ids, maxWindows)
	if err == nil && res.Tokens >= len(ids) {
		res.Bytes = len(text) // every token predicted: the whole text
	}
	return res, err
}
