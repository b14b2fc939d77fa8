// Package generate samples text from a trained run: it loads a checkpoint
// (internal/train), maps text to token ids and back with the run's codec
// (bytes, or the prepared dataset's tokenizer) and samples one token at a
// time with temperature, top-k and top-p (nucleus) truncation.
//
// It sits just above internal/train and tokenizer; cmd/kestrel (kestrel
// sample) and the demo call it.
package generate

import (
	"bufio"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/kestrel-lm/kestrel/internal/checkpoint"
	"github.com/kestrel-lm/kestrel/internal/kernels/ops"
	"github.com/kestrel-lm/kestrel/internal/model"
)

// Options are the sampling settings of Generate.
type Options struct {
	Prompt      string  // text to continue ("" = start of a document)
	Temperature float64 // 0 = greedy
	TopK        int     // 0 = all tokens
	TopP        float64 // nucleus mass in (0, 1]
	Tokens      int     // tokens to generate
	EMA         bool    // sample from the EMA weights
	Seed        uint64  // sampling seed
	// Precision is the forward's arithmetic: "fp32" ("" too) or "bf16"
	// (every product on bf16 inputs, float32 sums; model.SetPrecision).
	Precision string
	// Stream, when set, receives the prompt and then the continuation as
	// it is generated (kestrel sample); Status receives the "sampling …"
	// line and the checkpoint loader's log.
	Stream, Status io.Writer
}

// Validate checks the ranges of the sampling settings.
func (o Options) Validate() error {
	if o.Temperature < 0 || o.TopP <= 0 || o.TopP > 1 || o.TopK < 0 || o.Tokens < 0 {
		return fmt.Errorf("need --temperature >= 0, 0 < --top-p <= 1, --top-k >= 0, --tokens >= 0")
	}
	return nil
}

// Generate loads the newest valid checkpoint of run (or a checkpoint
// directory) and returns opt.Prompt followed by opt.Tokens sampled tokens,
// decoded with the run's codec (CodecFor). It is deterministic for a given
// seed. It runs the model with a KV cache (model.Decoder): each token costs
// one position through the model. While prompt and sample fit in seq_len
// tokens every token sees the whole context, as a forward pass over it
// would; once the cache is full the context shifts to its newest
// seq_len/2 tokens, so the model always sees between seq_len/2 and seq_len
// tokens (a full recompute per token would always see seq_len, at seq_len
// times the cost).
func Generate(run string, opt Options) (string, error) {
	if err := opt.Validate(); err != nil {
		return "", err
	}
	prec, err := ops.Resolve(opt.Precision)
	if err != nil {
		return "", fmt.Errorf("--precision: %w", err)
	}
	status := opt.Status
	if status == nil {
		status = io.Discard
	}
	m, l, err := checkpoint.LoadModel(run, opt.EMA, slog.New(slog.NewTextHandler(status, nil)))
	if err != nil {
		return "", err
	}
	m.SetPrecision(prec)
	codec, err := CodecFor(run, l.State)
	if err != nil {
		return "", err
	}
	fmt.Fprintf(status, "sampling %s (step %d%s)\n", l.Dir, l.State.Step, map[bool]string{true: ", EMA weights"}[opt.EMA])
	return Continue(m, codec, opt, status)
}

// Continue samples opt.Tokens tokens after opt.Prompt from a loaded model
// with the run's codec, as Generate does, and returns the prompt and the
// continuation. Callers that sample several prompts from one checkpoint
// load it once (internal/samples). opt.EMA is not read: m holds the
// weights to sample.
func Continue(m *model.Model, codec Codec, opt Options, status io.Writer) (string, error) {
	if err := opt.Validate(); err != nil {
		return "", err
	}
	if status == nil {
		status = io.Discard
	}
	ctx, err := codec.Encode(opt.Prompt)
	if err != nil {
		return "", fmt.Errorf("prompt: %w", err)
	}
	if len(ctx) == 0 {
		ctx = append([]int32(nil), codec.Start...)
	}
	var text strings.Builder
	text.WriteString(opt.Prompt)
	var out *bufio.Writer
	if opt.Stream != nil {
		out = bufio.NewWriter(opt.Stream)
		defer out.Flush()
		io.WriteString(out, opt.Prompt)
	}
	rng := rand.New(rand.NewPCG(opt.Seed, opt.Seed^0x5eed))
	T, V := m.Cfg.SeqLen, m.Cfg.Vocab
	logits := make([]float32, V)
	var pk Picker
	dec, err := m.NewDecoder(T)
	if err != nil {
		return "", err
	}
	// the prompt's last seq_len tokens fill the cache
	if err := dec.Append(ctx[max(0, len(ctx)-T):], logits); err != nil {
		return "", fmt.Errorf("prompt: %w", err)
	}
	t0 := time.Now()
	for i := 0; i < opt.Tokens; i++ {
		if codec.Vocab > 0 {
			for j := codec.Vocab; j < V; j++ {
				logits[j] = float32(math.Inf(-1))
			}
		}
		next := pk.Pick(logits, opt.Temperature, opt.TopK, opt.TopP, rng)
		ctx = append(ctx, next)
		piece := codec.Decode([]int32{next})
		text.WriteString(piece)
		if out != nil {
			io.WriteString(out, piece)
			if i%64 == 63 {
				out.Flush()
			}
		}
		if i == opt.Tokens-1 {
			break
		}
		feed := ctx[len(ctx)-1:]
		if dec.Len() == T {
			// the cache is full: shift the context, keeping its newest
			// half (positions restart at 0, RoPE as in training)
			dec.Reset()
			feed = ctx[len(ctx)-max(1, T/2):]
		}
		if err := dec.Append(feed, logits); err != nil {
			return text.String(), fmt.Errorf("token %d: %w", i+1, err)
		}
	}
	if opt.Tokens > 0 {
		sec := time.Since(t0).Seconds()
		fmt.Fprintf(status, "sampled %d tokens in %.2f s (%.0f tokens/s)\n", opt.Tokens, sec, float64(opt.Tokens)/sec)
	}
	return text.String(), nil
}
