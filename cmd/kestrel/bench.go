package main

import "github.com/spf13/cobra"

func newBenchCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "measure kestrel's hot paths and print JSON lines",
		Long: `Benchmarks that print one JSON object per measurement (with --json), so
numbers can be compared across machines and commits.

  kestrel bench gemm      SGEMM GFLOP/s per layout, shape and thread count, and the FMA peak
  kestrel bench step      tokens/s, MFU and step time of the ref7m training step
  kestrel bench prepare   data pipeline MB/s and peak RSS per stage
  kestrel bench tokenize  BPE encode MB/s against tiktoken-go on GPT-2's vocabulary
  kestrel bench loader    batches/s of the loader`,
	}
	cmd.AddCommand(newBenchGemmCmd(), newBenchStepCmd(), newBenchPrepareCmd(), newBenchTokenizeCmd(), newBenchLoaderCmd(), newBenchPeakCmd())
	return cmd
}
