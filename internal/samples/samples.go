// Package samples generates text from a checkpoint's weights for the
// record of a run ([samples], samples.jsonl): each prompt continued
// greedily and sampled with a fixed seed, so that the texts of successive
// checkpoints differ only by the weights. internal/run calls it on every
// checkpoint; the report and the dashboard read samples.jsonl through
// internal/runlog.
//
// Cost: one load of the checkpoint (its checksums verified) and
// len(prompts) × 2 × tokens positions through the KV-cache decoder, one
// position per token (internal/generate). For configs/shakespeare-char.toml
// (0.8M parameters, 3 prompts × 2 × 100 tokens) that is ~0.1 s per
// checkpoint on one core; it is bounded by Validate (at most MaxPrompts
// prompts and MaxTokens tokens) and runs between steps, outside step_time.
package samples

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"time"

	"github.com/kestrel-lm/kestrel/internal/generate"
	"github.com/kestrel-lm/kestrel/internal/runlog"
	"github.com/kestrel-lm/kestrel/internal/train"
)

// Config is the [samples] section.
type Config struct {
	Enabled bool     `toml:"enabled" comment:"generate text from each checkpoint's weights into samples.jsonl (each prompt greedy and sampled); shown in the dashboard and the run report"`
	Prompts []string `toml:"prompts" comment:"prompts to continue (\"\" = the start of a document); empty = defaults that suit the run's tokenizer: byte-level [\"\", \"ROMEO:\", \"The \"], a dataset's tokenizer [\"\", \"ROMEO:\", \"The\"] (no trailing space: BPE merges a space into the next word)"`
	Tokens  int      `toml:"tokens" comment:"tokens generated per prompt and mode; a checkpoint costs prompts × 2 × tokens decoder positions"`
	// The sampled generation; the greedy one takes the most likely token.
	Temperature float64 `toml:"temperature" comment:"temperature of the sampled generation (> 0; the greedy one is temperature 0)"`
	TopK        int     `toml:"top_k" comment:"top-k of the sampled generation (0 = all tokens)"`
	Seed        uint64  `toml:"seed" comment:"sampling seed, the same at every checkpoint, so successive texts differ only by the weights"`
	EMA         bool    `toml:"ema" comment:"sample the EMA weights (needs optim.ema_beta > 0) instead of the raw weights"`
}

// Bounds that keep the cost per checkpoint small.
const (
	MaxPrompts     = 16
	MaxTokens      = 2048
	MaxPromptBytes = 1024
)

// DefaultConfig is on, with the tokenizer's default prompts, 100 tokens,
// temperature 0.8, top-k 40 and seed 1.
func DefaultConfig() Config {
	return Config{Enabled: true, Tokens: 100, Temperature: 0.8, TopK: 40, Seed: 1}
}

// Validate checks the ranges, naming the key.
func (c Config) Validate() error {
	switch {
	case !c.Enabled:
		return nil
	case c.Tokens < 1 || c.Tokens > MaxTokens:
		return fmt.Errorf("samples.tokens = %d: want 1 … %d", c.Tokens, MaxTokens)
	case len(c.Prompts) > MaxPrompts:
		return fmt.Errorf("samples.prompts: %d prompts, at most %d", len(c.Prompts), MaxPrompts)
	case !(c.Temperature > 0) || c.Temperature > 10:
		return fmt.Errorf("samples.temperature = %g: want > 0 and <= 10 (the greedy generation is always made)", c.Temperature)
	case c.TopK < 0:
		return fmt.Errorf("samples.top_k = %d: want >= 0", c.TopK)
	}
	for i, p := range c.Prompts {
		if len(p) > MaxPromptBytes {
			return fmt.Errorf("samples.prompts[%d]: %d bytes, at most %d", i, len(p), MaxPromptBytes)
		}
	}
	return nil
}

// DefaultPrompts are the prompts of a run whose config lists none: an
// empty prompt (the start of a document: a newline for byte-level runs,
// the document separator for a dataset's tokenizer), a play's speaker and
// an English sentence start. Byte-level runs keep a trailing space ("The
// "); a BPE tokenizer would read it as a lone space token.
func DefaultPrompts(byteLevel bool) []string {
	if byteLevel {
		return []string{"", "ROMEO:", "The "}
	}
	return []string{"", "ROMEO:", "The"}
}

// Generate loads the checkpoint at ckptDir once (raw or EMA weights) and
// continues each prompt greedily and then sampled. The records name the
// checkpoint relative to runDir.
func Generate(ckptDir, runDir string, c Config) ([]runlog.Generation, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	m, l, err := train.LoadModel(ckptDir, c.EMA, slog.New(slog.DiscardHandler))
	if err != nil {
		return nil, fmt.Errorf("samples: %w", err)
	}
	codec, err := generate.CodecFor(ckptDir, l.State)
	if err != nil {
		return nil, fmt.Errorf("samples: %w", err)
	}
	prompts := c.Prompts
	if len(prompts) == 0 {
		prompts = DefaultPrompts(l.State.Tokenizer == "bytes" || l.State.Tokenizer == "" && l.State.Model.Vocab == 256)
	}
	rel, err := filepath.Rel(runDir, l.Dir)
	if err != nil || strings.HasPrefix(rel, "..") {
		rel = l.Dir
	}
	weights := "raw"
	if c.EMA {
		weights = "ema"
	}
	var out []runlog.Generation
	for _, p := range prompts {
		for _, mode := range []string{runlog.ModeGreedy, runlog.ModeSampled} {
			o := generate.Options{Prompt: p, TopP: 1, Tokens: c.Tokens, Seed: c.Seed}
			if mode == runlog.ModeSampled {
				o.Temperature, o.TopK = c.Temperature, c.TopK
			}
			t0 := time.Now()
			text, err := generate.Continue(m, codec, o, nil)
			if err != nil {
				return out, fmt.Errorf("samples: prompt %q at %s: %w", p, l.Dir, err)
			}
			out = append(out, runlog.Generation{
				Step: l.State.Step, TokensSeen: l.State.TokensSeen, Checkpoint: rel, Weights: weights,
				Prompt: p, Mode: mode, Temperature: o.Temperature, TopK: o.TopK, Seed: c.Seed, Tokens: c.Tokens,
				Text: strings.TrimPrefix(text, p), Seconds: time.Since(t0).Seconds(), UnixTime: float64(time.Now().UnixNano()) / 1e9,
			})
		}
	}
	return out, nil
}
