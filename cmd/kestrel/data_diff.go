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
		Long:  helpText("data-diff"),
		Args:  cobra.ExactArgs(2),
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
