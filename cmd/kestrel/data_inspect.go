package main

import (
	"github.com/spf13/cobra"

	"github.com/kestrel-lm/kestrel/cmd/kestrel/internal/flagx"
	"github.com/kestrel-lm/kestrel/cmd/kestrel/internal/show"
	"github.com/kestrel-lm/kestrel/internal/data/shards"
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
		Long:  helpText("data-inspect"),
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, err := flagx.DataPath(args[0])
			if err != nil {
				return err
			}
			in, err := shards.Inspect(dir, shards.InspectOptions{Source: source, Split: split, N: n, MaxChars: maxChars})
			show.DataInspect(cmd.OutOrStdout(), in)
			return err
		},
	}
	cmd.Flags().StringVar(&source, "source", "", "only this source (default: all)")
	cmd.Flags().StringVar(&split, "split", "train", "train | val")
	cmd.Flags().IntVar(&n, "n", 3, "documents to decode per source")
	cmd.Flags().IntVar(&maxChars, "max-chars", 600, "truncate each decoded document to this many characters (0 = all)")
	return cmd
}
