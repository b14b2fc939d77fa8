// Package samples is the [samples] section: the text a run generates from
// each checkpoint's weights into samples.jsonl (each prompt continued
// greedily and sampled with a fixed seed, so that the texts of successive
// checkpoints differ only by the weights), its bounds and the default
// prompts. internal/run generates them at every checkpoint (samples.go);
// the report and the dashboard read samples.jsonl through internal/runlog.
// It imports nothing of kestrel, so internal/config can hold its section.
//
// Cost: one load of the checkpoint (its checksums verified) and
// len(prompts) × 2 × tokens positions through the KV-cache decoder, one
// position per token (internal/generate). It is bounded by Validate (at
// most MaxPrompts prompts and MaxTokens tokens) and runs between steps,
// outside step_time.
package samples

import "fmt"

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
