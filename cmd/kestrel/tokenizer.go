package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kestrel-lm/kestrel/internal/data/texts"
	"github.com/kestrel-lm/kestrel/internal/datadir"
	"github.com/kestrel-lm/kestrel/tokenizer"
)

func newTokenizerCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "tokenizer",
		Short: "train, apply and inspect byte-level BPE tokenizers",
		Long: `Byte-level BPE tokenizers that read and write Hugging Face tokenizer.json and
read tiktoken rank files and GPT-2 vocab.json + merges.txt.

  kestrel tokenizer train  --input FILES… --vocab-size N --out tok.json
  kestrel tokenizer encode --tokenizer PATH [--lines] [--json]   (stdin → ids)
  kestrel tokenizer decode --tokenizer PATH                      (ids → text)
  kestrel tokenizer stats  --tokenizer PATH FILES…               (fertility, bytes/token, …)`,
	}
	cmd.AddCommand(newTokTrainCmd(), newTokEncodeCmd(), newTokDecodeCmd(), newTokStatsCmd())
	return cmd
}

// tokLoad loads a tokenizer, expanding ${KESTREL_DATA}.
func tokLoad(path string) (*tokenizer.Tokenizer, error) {
	if path == "" {
		return nil, fmt.Errorf("--tokenizer is required")
	}
	p, err := datadir.Expand(path)
	if err != nil {
		return nil, err
	}
	return tokenizer.Load(p)
}

func newTokTrainCmd() *cobra.Command {
	var (
		inputs []string
		out    string
		opts   tokenizer.TrainOptions
		quiet  bool
	)
	cmd := &cobra.Command{
		Use:   "train --input FILES… --vocab-size N --out tok.json",
		Short: "learn BPE merges from a corpus and write tokenizer.json",
		Long: `Learn byte-level BPE merges from text files (JSONL: the "text" field; .gz is
read), a directory of them, or a prepared dataset directory (its training
documents are decoded). The result is deterministic for a given input.`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			inputs = append(inputs, args...)
			if len(inputs) == 0 {
				return fmt.Errorf("tokenizer train: --input is required")
			}
			if out == "" {
				return fmt.Errorf("tokenizer train: --out is required")
			}
			if !quiet {
				opts.Progress = cmd.ErrOrStderr()
			}
			tok, err := texts.TrainTokenizer(cmd.Context(), inputs, opts, out)
			if err != nil {
				return fmt.Errorf("tokenizer train: %w", err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s: %d tokens (%d merges), pattern %s, hash %s\n", out, tok.VocabSize(), tok.NumMerges(), opts.Pattern, tok.Hash()[:16])
			return nil
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&inputs, "input", nil, "input files, globs or directories (repeatable)")
	f.StringVar(&out, "out", "", "output tokenizer.json")
	f.IntVar(&opts.VocabSize, "vocab-size", 8192, "vocabulary size including 256 bytes and special tokens")
	f.StringVar(&opts.Pattern, "pattern", "gpt2", "pre-tokenisation: gpt2 | llama3 (digits in groups of 1–3) | a regex")
	f.StringSliceVar(&opts.Special, "special", []string{"<|endoftext|>"}, "special tokens, in id order after the merges")
	f.IntVar(&opts.Workers, "workers", 0, "counting goroutines (0 = all cores)")
	f.IntVar(&opts.MinFrequency, "min-frequency", 2, "stop when the best pair occurs fewer times")
	f.BoolVar(&quiet, "quiet", false, "no progress bar")
	return cmd
}
