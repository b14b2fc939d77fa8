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
		Long: `Times kernels.Sgemm on the shapes (m,k,n) = (4096,512,512), (4096,512,2048),
(4096,2048,512), (4096,512,8192) in the layouts NN, NT (C = A·Bᵀ, as in
dX = dY·Wᵀ) and TN (C = Aᵀ·B, as in dW = Xᵀ·dY), for each thread count.
Each product runs repeatedly for --seconds; the rate of the median call is
reported. Just before each product the FMA peak (kernels.PeakGFLOPS, an
assembly loop of independent FMAs) is measured for the same thread count, so
pct_peak compares numbers taken under the same machine load.

On a machine shared with other work the wall-clock rates swing with the
load, so each measurement also reports a CPU-time rate: FLOPs ÷ process CPU
seconds × threads, i.e. the rate had each thread kept its core (time spent
descheduled, and time a thread waits blocked, do not count). pct_peak_cpu
compares those. With --json it prints one object per line:
  {"op":"gemm","layout":"NN","m":…,"k":…,"n":…,"threads":…,"gflops":…,"pct_peak":…,"gflops_cpu":…,"pct_peak_cpu":…}
  {"op":"peak","threads":…,"gflops":…,"gflops_cpu":…}   (medians of the probes of that thread count)`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			w := cmd.OutOrStdout()
			if !asJSON {
				fmt.Fprint(w, kernels.GEMMBenchHeader())
			}
			return kernels.BenchGEMM(cmd.Context(), kernels.GEMMBenchOptions{
				Threads: threads, Duration: time.Duration(seconds * float64(time.Second)),
				Product: func(b kernels.GEMMBench) {
					if asJSON {
						printJSON(w, b.Fields())
						return
					}
					fmt.Fprintln(w, b.Line())
				},
				Peak: func(p kernels.PeakBench) {
					if asJSON {
						printJSON(w, p.Fields())
						return
					}
					fmt.Fprintln(w, p.Line())
				},
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object per measurement")
	cmd.Flags().IntSliceVar(&threads, "threads", []int{1, 2}, "comma-separated thread counts")
	cmd.Flags().Float64Var(&seconds, "seconds", 1, "time spent on each product")
	return cmd
}
