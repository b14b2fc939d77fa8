package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/kestrel-lm/kestrel/internal/peak"
)

func newBenchPeakCmd() *cobra.Command {
	var (
		asJSON  bool
		threads int
		seconds float64
		replace bool
	)
	cmd := &cobra.Command{
		Use:   "peak",
		Short: "measure the FMA peak carefully and cache it as this machine's mfu reference",
		Long: `Runs the FMA probe (kernels.PeakGFLOPS) repeatedly, 250 ms at a time, for
--seconds, keeps the maximum, and stores it in peak.json in kestrel's cache
directory ($KESTREL_CACHE_DIR, else the user's cache directory + /kestrel,
e.g. ~/.cache/kestrel) under this machine's key: CPU model, GEMM
implementation and CPU features, thread count. The cache only rises: a
measurement below the cached value is reported and not stored (--replace
stores it anyway).

kestrel train (unless train.peak_gflops is set) and kestrel bench step
divide by this cached peak for mfu. Their start-up check (3 probes of
100 ms) raises it when it reads higher and reports contention when it reads
below 0.8× it; when nothing is cached they probe for about a second and cache
that. Run this once on a quiet machine so the reference does not depend on
the load at the start of a run.
With --json it prints one object:
  {"op":"peak","gflops":…,"median":…,"min":…,"probes":…,"threads":…,"key":…,"cache":…,"stored":…,"cached_gflops":…}`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !(seconds > 0) {
				return fmt.Errorf("bench peak: --seconds must be > 0, got %v", seconds)
			}
			if threads < 0 {
				return fmt.Errorf("bench peak: --threads must be >= 0, got %d", threads)
			}
			r, err := peak.Bench(cmd.Context(), peak.BenchOptions{Threads: threads,
				Duration: time.Duration(seconds * float64(time.Second)), Replace: replace})
			if err != nil {
				return fmt.Errorf("bench peak: %w", err)
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), r.Fields())
			}
			r.WriteText(cmd.OutOrStdout())
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object")
	cmd.Flags().IntVar(&threads, "threads", 0, "threads to probe on (0 = the kernels' threads, GOMAXPROCS)")
	cmd.Flags().Float64Var(&seconds, "seconds", 5, "total probing time")
	cmd.Flags().BoolVar(&replace, "replace", false, "store the measurement even when the cache holds a higher peak")
	return cmd
}
