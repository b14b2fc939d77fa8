package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/kestrel-lm/kestrel/internal/kernels"
)

func newBenchGemmCmd() *cobra.Command {
	var (
		asJSON  bool
		threads []int
		seconds float64
	)
	cmd := &cobra.Command{
		Use:   "gemm",
		Short: "SGEMM GFLOP/s per layout, shape and thread count, and the measured FMA peak",
		Long:  helpText("bench-gemm"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			w := cmd.OutOrStdout()
			if !asJSON {
				fmt.Fprint(w, kernels.GEMMBenchHeader())
			}
			return kernels.BenchGEMM(cmd.Context(), kernels.GEMMBenchOptions{
				Threads: threads, Duration: time.Duration(seconds * float64(time.Second)),
				Product: func(b kernels.GEMMBench) { emit(w, asJSON, b.Fields(), b.Line()) },
				Peak:    func(p kernels.PeakBench) { emit(w, asJSON, p.Fields(), p.Line()) },
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object per measurement")
	cmd.Flags().IntSliceVar(&threads, "threads", []int{1, 2}, "comma-separated thread counts")
	cmd.Flags().Float64Var(&seconds, "seconds", 1, "time spent on each product")
	return cmd
}
