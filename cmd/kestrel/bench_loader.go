package main

import "github.com/spf13/cobra"

func newBenchLoaderCmd() *cobra.Command {
	return stubBench("loader", "loader batches/s")
}
