package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kestrel-lm/kestrel/internal/data/prepare"
)

func newDataDiffCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "diff A B",
		Short: "compare two prepared datasets: kept documents, rejects, counts, tokenizer, tokens",
		Long: `Compares two datasets written by kestrel prepare (one process or several
ranks) and prints every difference: kept documents per source in order (id,
text, meta), rejected documents (stage, rule, detail), the counts of
report.json, tokenizer.json byte for byte, and the token sequence and
document ids per source and split. Shard file boundaries, timings and paths
are not compared. Exits non-zero when the datasets differ.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			diffs, err := prepare.Diff(args[0], args[1])
			if err != nil {
				return err
			}
			for _, d := range diffs {
				fmt.Fprintln(cmd.OutOrStdout(), d)
			}
			if len(diffs) > 0 {
				return fmt.Errorf("data diff: %s and %s differ (%d differences shown)", args[0], args[1], len(diffs))
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s and %s are identical\n", args[0], args[1])
			return nil
		},
	}
}
