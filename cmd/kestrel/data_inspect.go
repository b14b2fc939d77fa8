package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kestrel-lm/kestrel/internal/data/shards"
	"github.com/kestrel-lm/kestrel/internal/datadir"
)

func newDataInspectCmd() *cobra.Command {
	var (
		source   string
		split    string
		n        int
		maxChars int
	)
	cmd := &cobra.Command{
		Use:   "inspect DATASET",
		Short: "decode sample documents of a prepared dataset back to text, with token counts and shares",
		Long: `Print a prepared dataset's tokenizer, per-source token and document counts and
shares, then decode --n documents per source (evenly spaced through the
split) back to text with their token ranges — the "decode a batch" check.
All shards read are verified against their sha256.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, err := datadir.Expand(args[0])
			if err != nil {
				return err
			}
			ds, err := shards.Open(dir)
			if err != nil {
				return err
			}
			defer ds.Close()
			tok, err := ds.Tokenizer()
			if err != nil {
				return err
			}
			m := ds.Manifest()
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "dataset %s  hash %s\n", dir, m.DatasetHash[:16])
			fmt.Fprintf(out, "tokenizer %s  vocab %d  hash %s  separator %s (%d)  %d-byte tokens\n", m.Tokenizer.File, m.Tokenizer.VocabSize, m.Tokenizer.Hash[:16], m.Separator, m.SeparatorID, m.TokenBytes)
			fmt.Fprintf(out, "%d shards, %d tokens, %d documents\n\n", len(m.Shards), m.TotalTokens, m.TotalDocs)
			fmt.Fprintf(out, "%-16s %14s %8s %10s %14s %10s\n", "source", "train tokens", "share", "train docs", "val tokens", "val docs")
			for _, s := range m.Sources {
				fmt.Fprintf(out, "%-16s %14d %7.2f%% %10d %14d %10d\n", s.Source, s.TrainTokens, m.TrainPercent(s.Source), s.TrainDocs, s.ValTokens, s.ValDocs)
			}
			if split != shards.Train && split != shards.Val {
				return fmt.Errorf("data inspect: --split %q: want train or val", split)
			}
			sources := ds.Sources()
			if source != "" {
				sources = []string{source}
			}
			for _, src := range sources {
				st, err := ds.Stream(src, split)
				if err != nil {
					return err
				}
				fmt.Fprintf(out, "\n== %s/%s: %d tokens, %d documents, %d shards\n", src, split, st.Len(), st.NumDocs(), len(ds.Shards(src, split)))
				docs, err := st.SampleDocs(tok, n)
				if err != nil {
					return fmt.Errorf("data inspect: %s/%s: %w", src, split, err)
				}
				for _, d := range docs {
					text := d.Text
					if maxChars > 0 && len([]rune(text)) > maxChars {
						text = string([]rune(text)[:maxChars]) + " …"
					}
					fmt.Fprintf(out, "-- document %d (id %q): tokens [%d, %d) (%d tokens)\n%s\n", d.Index, d.ID, d.Start, d.Start+int64(d.Tokens), d.Tokens, strings.TrimRight(text, "\n"))
				}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&source, "source", "", "only this source (default: all)")
	cmd.Flags().StringVar(&split, "split", "train", "train | val")
	cmd.Flags().IntVar(&n, "n", 3, "documents to decode per source")
	cmd.Flags().IntVar(&maxChars, "max-chars", 600, "truncate each decoded document to this many characters (0 = all)")
	return cmd
}
