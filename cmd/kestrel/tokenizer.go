package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kestrel-lm/kestrel/cmd/kestrel/internal/flagx"
	"github.com/kestrel-lm/kestrel/cmd/kestrel/internal/show"
	"github.com/kestrel-lm/kestrel/internal/data/texts"
	"github.com/kestrel-lm/kestrel/tokenizer"
)

func newTokenizerCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "tokenizer",
		Short: "train, apply and inspect byte-level BPE tokenizers",
		Long:  helpText("tokenizer"),
	}
	cmd.AddCommand(newTokTrainCmd(), newTokEncodeCmd(), newTokDecodeCmd(), newTokStatsCmd())
	return cmd
}

// tokFlags are --tokenizer and --pattern, which encode, decode and stats share.
type tokFlags struct{ path, pattern string }

// addTokFlags declares them on cmd.
func addTokFlags(cmd *cobra.Command) *tokFlags {
	t := &tokFlags{}
	cmd.Flags().StringVar(&t.path, "tokenizer", "", "tokenizer.json, *.tiktoken, vocab.json or a directory")
	cmd.Flags().StringVar(&t.pattern, "pattern", "", tokenizer.PatternHelp)
	return t
}

// load loads the tokenizer (${KESTREL_DATA} expanded), --pattern overriding.
func (t *tokFlags) load() (*tokenizer.Tokenizer, error) {
	if t.path == "" {
		return nil, fmt.Errorf("--tokenizer is required")
	}
	p, err := flagx.DataPath(t.path)
	if err != nil {
		return nil, err
	}
	return tokenizer.LoadWith(p, tokenizer.LoadOptions{Pattern: t.pattern})
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
		Long:  helpText("tokenizer-train"),
		Args:  cobra.ArbitraryArgs,
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
			inputs, err := flagx.DataPaths(inputs...)
			if err != nil {
				return err
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
	var tf *tokFlags
	var lines, asJSON, special bool
	cmd := &cobra.Command{
		Use:   "encode --tokenizer PATH [--lines] [--json]",
		Short: "encode stdin to token ids",
		Long:  helpText("tokenizer-encode"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			tok, err := tf.load()
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
	tf = addTokFlags(cmd)
	cmd.Flags().BoolVar(&lines, "lines", false, "encode each line separately, one JSON array per line")
	cmd.Flags().BoolVar(&asJSON, "json", false, "write a JSON array")
	cmd.Flags().BoolVar(&special, "special", false, "recognise special tokens such as <|endoftext|> in the text")
	return cmd
}

func newTokDecodeCmd() *cobra.Command {
	var tf *tokFlags
	cmd := &cobra.Command{
		Use:   "decode --tokenizer PATH",
		Short: "decode token ids on stdin back to text",
		Long:  helpText("tokenizer-decode"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			tok, err := tf.load()
			if err != nil {
				return err
			}
			if err := tok.DecodeLines(cmd.InOrStdin(), cmd.OutOrStdout()); err != nil {
				return fmt.Errorf("tokenizer decode: stdin %w", err)
			}
			return nil
		},
	}
	tf = addTokFlags(cmd)
	return cmd
}

func newTokStatsCmd() *cobra.Command {
	var tf *tokFlags
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "stats --tokenizer PATH FILES…",
		Short: "report fertility, bytes per token, continued-word share and vocabulary use",
		Long:  helpText("tokenizer-stats"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return fmt.Errorf("tokenizer stats: name the corpus files")
			}
			tok, err := tf.load()
			if err != nil {
				return err
			}
			if args, err = flagx.DataPaths(args...); err != nil {
				return err
			}
			var readErr error
			st := tok.Stats(texts.Read(args, &readErr))
			if readErr != nil {
				return fmt.Errorf("tokenizer stats: %w", readErr)
			}
			if asJSON {
				return show.JSON(cmd.OutOrStdout(), st)
			}
			return show.TokenizerStats(cmd.OutOrStdout(), st)
		},
	}
	tf = addTokFlags(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "one JSON object")
	return cmd
}
