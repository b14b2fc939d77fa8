package main

import (
	"encoding/json"
	"io"

	"github.com/spf13/cobra"
)

func newBenchCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "measure kestrel's hot paths and print JSON lines",
		Long: `Benchmarks that print one JSON object per measurement (with --json), so
numbers can be compared across machines and commits.

  kestrel bench peak      the FMA peak mfu divides by, measured carefully and cached
  kestrel bench gemm      SGEMM GFLOP/s per layout, shape and thread count, and the FMA peak
  kestrel bench step      tokens/s, MFU, peak RSS of a training step (--preset, --config, --threads 1,2)
  kestrel bench eval      tokens/s of forward-only evaluation against a training step
  kestrel bench sample    tokens/s of sampling with the KV cache against without
  kestrel bench prepare   data pipeline MB/s and peak RSS per stage
  kestrel bench tokenize  BPE encode MB/s against tiktoken-go on GPT-2's vocabulary
  kestrel bench loader    batches/s of the loader`,
	}
	cmd.AddCommand(newBenchGemmCmd(), newBenchStepCmd(), newBenchPrepareCmd(), newBenchTokenizeCmd(), newBenchLoaderCmd(), newBenchPeakCmd())
	cmd.AddCommand(newBenchEvalCmd(), newBenchSampleCmd())
	return cmd
}

// printJSON writes v as one line of JSON (the --json output of the bench
// commands).
func printJSON(w io.Writer, v any) error {
	return json.NewEncoder(w).Encode(v)
}
