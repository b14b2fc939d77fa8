package main

import "github.com/spf13/cobra"

func newBenchStepCmd() *cobra.Command {
	return stubBench("step", "tokens/s, MFU and step time of the ref7m training step")
}
