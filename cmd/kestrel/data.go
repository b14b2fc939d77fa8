package main

import (
	"github.com/spf13/cobra"

	"github.com/kestrel-lm/kestrel/internal/data/loader"
)

func newDataCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "data",
		Short: "inspect prepared datasets and how the loader shuffles them",
		Long: `Look inside what the model will be fed.

  kestrel data inspect DATASET [--source S] [--n 3]   decode sample documents back to text
  kestrel data shuffle-report --dataset D --permutation feistel|lcg
                                                       how i.i.d. the batches are, with a plot`,
	}
	cmd.AddCommand(newDataInspectCmd(), newDataShuffleReportCmd())
	return cmd
}

// openDataset opens a directory written by kestrel prepare for the loader.
func openDataset(path string) (*loader.Dataset, error) {
	ds, _, err := loader.Open(path)
	return ds, err
}
