package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

func newTokEncodeCmd() *cobra.Command {
	var path string
	var lines, asJSON, special bool
	cmd := &cobra.Command{
		Use:   "encode --tokenizer PATH [--lines] [--json]",
		Short: "encode stdin to token ids",
		Long: `Read text on stdin and write token ids: space-separated (or one JSON array
with --json) for the whole input, or one JSON array per input line with
--lines (the newline is not encoded).`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			tok, err := tokLoad(path)
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
	cmd.Flags().BoolVar(&lines, "lines", false, "encode each line separately, one JSON array per line")
	cmd.Flags().BoolVar(&asJSON, "json", false, "write a JSON array")
	cmd.Flags().BoolVar(&special, "special", false, "recognise special tokens such as <|endoftext|> in the text")
	return cmd
}
