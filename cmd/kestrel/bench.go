package main

import (
	"github.com/spf13/cobra"
)

func newBenchCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "measure kestrel's hot paths and print JSON lines",
		Long:  helpText("bench"),
	}
	cmd.AddCommand(newBenchGemmCmd(), newBenchStepCmd(), newBenchPrepareCmd(), newBenchTokenizeCmd(), newBenchLoaderCmd(), newBenchPeakCmd())
	cmd.AddCommand(newBenchEvalCmd(), newBenchSampleCmd())
	return cmd
}
