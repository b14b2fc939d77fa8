package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

func newTokDecodeCmd() *cobra.Command {
	var path string
	cmd := &cobra.Command{
		Use:   "decode --tokenizer PATH",
		Short: "decode token ids on stdin back to text",
		Long: `Read ids on stdin and write the exact bytes they stand for. A line holding a
JSON array (the output of encode --lines) decodes to one line of text; other
input is whitespace-separated ids decoded as one text.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			tok, err := tokLoad(path)
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
	return cmd
}
