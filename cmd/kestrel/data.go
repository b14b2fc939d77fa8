package main

import "github.com/spf13/cobra"

func newDataCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "data",
		Short: "inspect prepared datasets and how the loader shuffles them",
		Long: `Look inside what the model will be fed.

  kestrel data inspect DATASET [--source S] [--n 3]   decode sample documents back to text
  kestrel data shuffle-report --dataset D --permutation feistel|lcg
                                                       how i.i.d. the batches are, with a plot
  kestrel data diff A B                               are two prepared datasets identical (docs/prepare-distributed.md)`,
	}
	cmd.AddCommand(newDataInspectCmd(), newDataShuffleReportCmd(), newDataDiffCmd())
	return cmd
}
