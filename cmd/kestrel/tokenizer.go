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
read tiktoken rank files (regex and special ids from NAME.json beside them:
cl100k_base, o200k_base …) and GPT-2 vocab.json + merges.txt.

  kestrel tokenizer train  --input FILES… --vocab-size N --out tok.json
  kestrel tokenizer encode --tokenizer PATH [--lines] [--json]   (stdin → ids)
  kestrel tokenizer decode --tokenizer PATH                      (ids → text)
  kestrel tokenizer stats  --tokenizer PATH FILES…               (fertility, bytes/token, …)`,
	}
	cmd.AddCommand(newTokTrainCmd(), newTokEncodeCmd(), newTokDecodeCmd(), newTokStatsCmd())
	return cmd
}

// tokLoad loads a tokenizer (${KESTREL_DATA} expanded), pattern overriding.
func tokLoad(path, pattern string) (*tokenizer.Tokenizer, error) {
	if path == "" {
		return nil, fmt.Errorf("--tokenizer is required")
	}
	p, err := datadir.Expand(path)
	if err != nil {
		return nil, err
	}
	return tokenizer.LoadWith(p, tokenizer.LoadOptions{Pattern: pattern})
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
	f.StringVar(&opts.Pattern, "pattern", "gpt2", "pre-tokenisation: gpt2 | llama3 (digits in groups of 1–3) | cl100k | o200k | a regex")
	f.StringSliceVar(&opts.Special, "special", []string{"<|endoftext|>"}, "special tokens, in id order after the merges")
	f.IntVar(&opts.Workers, "workers", 0, "counting goroutines (0 = all cores)")
	f.IntVar(&opts.MinFrequency, "min-frequency", 2, "stop when the best pair occurs fewer times")
	f.BoolVar(&quiet, "quiet", false, "no progress bar")
	return cmd
}

func newTokEncodeCmd() *cobra.Command {
	var path, pattern string
	var lines, asJSON, special bool
	cmd := &cobra.Command{
		Use:   "encode --tokenizer PATH [--lines] [--json]",
		Short: "encode stdin to token ids",
		Long: `Read text on stdin and write token ids: space-separated (or one JSON array
with --json) for the whole input, or one JSON array per input line with
--lines (the newline is not encoded).`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			tok, err := tokLoad(path, pattern)
			if err != nil {
				return err
			}
			if lines {
				err = tok.EncodeLines(cmd.InOrStdin(), cmd.OutOrStdout(), special)
			} else {
				err = tok.EncodeText(cmd.InOrStdin(), cmd.OutOrStdout(), asJSON, special)
			}
			if err != nil {
				return fmt.Errorf("tokenizer encode: stdin: %w", err)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&path, "tokenizer", "", "tokenizer.json, *.tiktoken, vocab.json or a directory")
	cmd.Flags().StringVar(&pattern, "pattern", "", tokenizer.PatternHelp)
	cmd.Flags().BoolVar(&lines, "lines", false, "encode each line separately, one JSON array per line")
	cmd.Flags().BoolVar(&asJSON, "json", false, "write a JSON array")
	cmd.Flags().BoolVar(&special, "special", false, "recognise special tokens such as <|endoftext|> in the text")
	return cmd
}

func newTokDecodeCmd() *cobra.Command {
	var path, pattern string
	cmd := &cobra.Command{
		Use:   "decode --tokenizer PATH",
		Short: "decode token ids on stdin back to text",
		Long: `Read ids on stdin and write the exact bytes they stand for. A line holding a
JSON array (the output of encode --lines) decodes to one line of text; other
input is whitespace-separated ids decoded as one text.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			tok, err := tokLoad(path, pattern)
			if err != nil {
				return err
			}
			if err := tok.DecodeLines(cmd.InOrStdin(), cmd.OutOrStdout()); err != nil {
				return fmt.Errorf("tokenizer decode: stdin %w", err)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&path, "tokenizer", "", "tokenizer.json, *.tiktoken, vocab.json or a directory")
	cmd.Flags().StringVar(&pattern, "pattern", "", tokenizer.PatternHelp)
	return cmd
}

func newTokStatsCmd() *cobra.Command {
	var path, pattern string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "stats --tokenizer PATH FILES…",
		Short: "report fertility, bytes per token, continued-word share and vocabulary use",
		Long: `Encode a corpus and report: fertility (tokens per whitespace-separated word,
each word encoded as it appears, with its leading space), bytes per token,
continued-word share (words split into more than one token) and vocabulary
use (share of ids that occur).`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return fmt.Errorf("tokenizer stats: name the corpus files")
			}
			tok, err := tokLoad(path, pattern)
			if err != nil {
				return err
			}
			var readErr error
			st := tok.Stats(texts.Read(args, &readErr))
			if readErr != nil {
				return fmt.Errorf("tokenizer stats: %w", readErr)
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), st)
			}
			return st.WriteText(cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVar(&path, "tokenizer", "", "tokenizer.json, *.tiktoken, vocab.json or a directory")
	cmd.Flags().StringVar(&pattern, "pattern", "", tokenizer.PatternHelp)
	cmd.Flags().BoolVar(&asJSON, "json", false, "one JSON object")
	return cmd
}
