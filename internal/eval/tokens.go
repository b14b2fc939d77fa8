package eval

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/kestrel-lm/kestrel/internal/fileguard"
)

// windows cuts ids into non-overlapping windows of seq_len predictions:
// window k reads ids[k·T : k·T+T] and predicts ids[k·T+1 : k·T+T+1], so
// every token after the first is predicted exactly once, the first of each
// window from the window's first token alone. maxWindows > 0 keeps the
// first maxWindows.
func (s *Scorer) windows(ids []int32, maxWindows int) []seq {
	T := s.Model.Cfg.SeqLen
	var seqs []seq
	for lo := 0; lo+1 < len(ids); lo += T {
		if maxWindows > 0 && len(seqs) == maxWindows {
			break
		}
		hi := min(lo+T+1, len(ids))
		seqs = append(seqs, seq{req: len(seqs), tokens: ids[lo:hi], cont: hi - lo - 1})
	}
	return seqs
}

// TokenLogProbs returns ln p(ids[i] | context) for i = 1 … len(ids)−1 (the
// first token is context only), in the windows of TextNLL: non-overlapping
// windows of seq_len predictions, each starting from its own first token.
func (s *Scorer) TokenLogProbs(ids []int32) ([]float64, error) {
	if len(ids) < 2 {
		return nil, fmt.Errorf("score: %d token(s): need at least 2 (the first is context only)", len(ids))
	}
	V := s.Model.Cfg.Vocab
	for i, id := range ids {
		if id < 0 || int(id) >= V {
			return nil, fmt.Errorf("score: token %d (position %d) outside the vocabulary [0, %d)", id, i, V)
		}
	}
	seqs := s.windows(ids, 0)
	out := make([]float64, 0, len(ids)-1)
	// windows are in order and forwardAll keeps their order
	err := s.forwardAll(seqs, func(_ seq, lps []float64) { out = append(out, lps...) })
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ScoreOptions are the settings of ScoreText (kestrel score).
type ScoreOptions struct {
	Run        string // run directory or checkpoint directory
	Checkpoint string // last (default), last-good, step-N or a directory
	EMA        bool
	Text       string  // text to encode with the run's codec (or)
	File       string  // a file whose text to encode (or)
	TokenList  string  // token ids as "1,2,3" (ParseTokens) (or)
	Tokens     []int32 // token ids, used as given
	NoStart    bool    // do not put the codec's start token in front of Text
	Status     io.Writer
}

// TokenScore is one token of a scored sequence. LogProb is ln p(token |
// the tokens before it in its window); nil for the first token, which is
// context only.
type TokenScore struct {
	Pos     int      `json:"pos"`
	ID      int32    `json:"id"`
	Text    string   `json:"text"`
	LogProb *float64 `json:"logprob"`
}

// ScoreResult is kestrel score's JSON: every token with its
// log-probability, and the totals over the scored ones.
type ScoreResult struct {
	Checkpoint string       `json:"checkpoint"`
	Step       int          `json:"step"`
	EMA        bool         `json:"ema"`
	SeqLen     int          `json:"seq_len"`
	Windows    int          `json:"windows"`
	Tokens     []TokenScore `json:"tokens"`
	Scored     int          `json:"scored"`
	TotalNLL   float64      `json:"total_nll"` // −Σ logprob, nats
	MeanNLL    float64      `json:"mean_nll"`  // TotalNLL / Scored: the loss
	// Bytes and BitsPerByte are set when Text was given: the bytes of the
	// text and TotalNLL / (ln 2 · Bytes).
	Bytes       int     `json:"bytes,omitempty"`
	BitsPerByte float64 `json:"bits_per_byte,omitempty"`
}

// ParseTokens reads a token list "1,2,3" (commas or spaces).
func ParseTokens(s string) ([]int32, error) {
	f := strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' || r == '\t' })
	out := make([]int32, 0, len(f))
	for i, x := range f {
		v, err := strconv.ParseInt(x, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("--tokens: item %d %q: not a token id", i+1, x)
		}
		out = append(out, int32(v))
	}
	return out, nil
}

// MaxScoreBytes bounds what score reads: the bytes of --file or --text and
// the count of --tokens. Each token's result is kept and printed, so an
// unbounded input (a 20 MB file) ran the command out of memory.
const MaxScoreBytes = 1 << 20

// ScoreText loads the checkpoint and scores opt.Text (start token in front
// unless NoStart) or opt.Tokens.
func ScoreText(opt ScoreOptions) (*ScoreResult, error) {
	if opt.Run == "" {
		return nil, fmt.Errorf("score: --run is required")
	}
	n := 0
	for _, given := range []bool{opt.Text != "", opt.File != "", opt.TokenList != "", opt.Tokens != nil} {
		if given {
			n++
		}
	}
	if n != 1 {
		return nil, fmt.Errorf("score: give exactly one of --text, --file and --tokens")
	}
	if opt.File != "" {
		b, err := fileguard.ReadFile(opt.File, MaxScoreBytes) // a regular file, bounded
		if err != nil {
			return nil, fmt.Errorf("score: --file: %w", err)
		}
		opt.Text = string(b)
	}
	if len(opt.Text) > MaxScoreBytes {
		return nil, fmt.Errorf("score: --text of %d bytes, over the %d-byte limit (score a shorter text, or use kestrel eval for a corpus)", len(opt.Text), MaxScoreBytes)
	}
	if opt.File != "" && opt.Text == "" {
		return nil, fmt.Errorf("score: --file %s is empty: nothing to score", opt.File)
	}
	if opt.TokenList != "" {
		ids, err := ParseTokens(opt.TokenList)
		if err != nil {
			return nil, fmt.Errorf("score: %w", err)
		}
		opt.Tokens = ids
	}
	if len(opt.Tokens) > MaxScoreBytes {
		return nil, fmt.Errorf("score: %d tokens, over the limit of %d", len(opt.Tokens), MaxScoreBytes)
	}
	s, l, err := Load(opt.Run, opt.Checkpoint, opt.EMA, opt.Status)
	if err != nil {
		return nil, fmt.Errorf("score: %w", err)
	}
	ids := opt.Tokens
	if ids == nil {
		enc, err := s.Codec.Encode(opt.Text)
		if err != nil {
			return nil, fmt.Errorf("score: encode: %w", err)
		}
		if !opt.NoStart {
			enc = append(append([]int32(nil), s.Codec.Start...), enc...)
		}
		ids = enc
	}
	lps, err := s.TokenLogProbs(ids)
	if err != nil {
		return nil, err
	}
	r := &ScoreResult{Checkpoint: l.Dir, Step: l.State.Step, EMA: opt.EMA, SeqLen: s.Model.Cfg.SeqLen,
		Windows: len(s.windows(ids, 0)), Scored: len(lps)}
	r.Tokens = make([]TokenScore, len(ids))
	for i, id := range ids {
		r.Tokens[i] = TokenScore{Pos: i, ID: id, Text: s.Codec.Decode([]int32{id})}
		if i > 0 {
			lp := lps[i-1]
			r.Tokens[i].LogProb = &lp
			r.TotalNLL -= lp
		}
	}
	r.MeanNLL = r.TotalNLL / float64(r.Scored)
	if opt.Text != "" {
		r.Bytes = len(opt.Text)
		r.BitsPerByte = r.TotalNLL / (math.Ln2 * float64(r.Bytes))
	}
	return r, nil
}
