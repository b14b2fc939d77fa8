package main

import (
	"bytes"
	"encoding/json"
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
			out := cmd.OutOrStdout()
			if asJSON {
				b, _ := json.Marshal(st)
				fmt.Fprintln(out, string(b))
				return nil
			}
			var b bytes.Buffer
			fmt.Fprintf(&b, "bytes                 %d\nwords                 %d\ntokens                %d\n", st.Bytes, st.Words, st.Tokens)
			fmt.Fprintf(&b, "fertility             %.3f tokens/word\nbytes per token       %.3f\n", st.Fertility, st.BytesPerToken)
			fmt.Fprintf(&b, "continued-word share  %.1f%%\nvocabulary use        %d of %d (%.1f%%)\n", 100*st.ContinuedWords, st.VocabUsed, st.VocabSize, 100*st.VocabUse)
			_, err = out.Write(b.Bytes())
			return err
		},
	}
	cmd.Flags().StringVar(&path, "tokenizer", "", "tokenizer.json, *.tiktoken, vocab.json or a directory")
	cmd.Flags().BoolVar(&asJSON, "json", false, "one JSON object")
	return cmd
}
