package main

import "github.com/spf13/cobra"

func newBenchPrepareCmd() *cobra.Command {
	return stubBench("prepare", "data pipeline MB/s and peak RSS per stage on a generated corpus")
}
