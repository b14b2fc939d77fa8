package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/kestrel-lm/kestrel/cmd/kestrel/internal/show"
	"github.com/kestrel-lm/kestrel/internal/kernels"
)

func newBenchGemmCmd() *cobra.Command {
	var (
		asJSON  bool
		threads []int
		seconds float64
		dtypes  []string
	)
	cmd := &cobra.Command{
		Use:   "gemm",
		Short: "SGEMM GFLOP/s per layout, shape and thread count, and the measured FMA peak",
		Long:  helpText("bench-gemm"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			w := cmd.OutOrStdout()
			if !asJSON {
				fmt.Fprint(w, show.GEMMHeader())
			}
			return kernels.BenchGEMM(cmd.Context(), kernels.GEMMBenchOptions{
				Threads: threads, DTypes: dtypes, Duration: time.Duration(seconds * float64(time.Second)),
				Product: func(b kernels.GEMMBench) { show.Emit(w, asJSON, show.GEMMFields(b), show.GEMMLine(b)) },
				Peak:    func(p kernels.PeakBench) { show.Emit(w, asJSON, show.GEMMPeakFields(p), show.GEMMPeakLine(p)) },
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object per measurement")
	cmd.Flags().IntSliceVar(&threads, "threads", []int{1, 2}, "comma-separated thread counts")
	cmd.Flags().StringSliceVar(&dtypes, "dtype", []string{"fp32"}, "arithmetics to time, each product in each in turn: fp32 (Sgemm), bf16 (SgemmBF16, AVX512_BF16)")
	cmd.Flags().Float64Var(&seconds, "seconds", 1, "time spent on each product")
	return cmd
}
