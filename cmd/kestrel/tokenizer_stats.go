package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kestrel-lm/kestrel/internal/data/texts"
)

func newTokStatsCmd() *cobra.Command {
	var path string
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
			tok, err := tokLoad(path)
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
	cmd.Flags().BoolVar(&asJSON, "json", false, "one JSON object")
	return cmd
}
