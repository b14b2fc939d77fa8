package main

import "github.com/spf13/cobra"

func newBenchGemmCmd() *cobra.Command {
	return stubBench("gemm", "SGEMM GFLOP/s per layout, shape and thread count, and the measured FMA peak")
}
