package main

import (
	"encoding/json"
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
			w := cmd.OutOrStdout()
			if asJSON {
				out := map[string]any{"op": "peak", "gflops": round1(r.GFLOPS), "median": round1(r.Median), "min": round1(r.Min),
					"probes": len(r.Probes), "probe_ms": r.Each.Milliseconds(), "threads": r.Threads, "key": r.Key.String(),
					"impl": r.Key.Impl, "cache": r.CachePath, "stored": r.Stored, "cached_gflops": round1(r.Cached.GFLOPS),
					"cached_at": r.Cached.MeasuredAt.Format(time.RFC3339)}
				if r.CacheWarning != "" {
					out["cache_warning"] = r.CacheWarning
				}
				data, _ := json.Marshal(out)
				fmt.Fprintln(w, string(data))
				return nil
			}
			if r.CacheWarning != "" {
				fmt.Fprintf(w, "warning: %s (replaced)\n", r.CacheWarning)
			}
			fmt.Fprintf(w, "FMA peak: %.1f GFLOP/s (max of %d probes of %v on %d threads; median %.1f, min %.1f)\n",
				r.GFLOPS, len(r.Probes), r.Each, r.Threads, r.Median, r.Min)
			fmt.Fprintf(w, "key:   %s\ncache: %s\n", r.Key, r.CachePath)
			switch {
			case r.Stored && r.Previous != nil:
				fmt.Fprintf(w, "stored (was %.1f GFLOP/s, measured %s)\n", r.Previous.GFLOPS, r.Previous.MeasuredAt.Format(time.DateOnly))
			case r.Stored:
				fmt.Fprintln(w, "stored")
			default:
				fmt.Fprintf(w, "kept the cached %.1f GFLOP/s (measured %s): the cache only rises; --replace stores this measurement\n",
					r.Cached.GFLOPS, r.Cached.MeasuredAt.Format(time.DateOnly))
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object")
	cmd.Flags().IntVar(&threads, "threads", 0, "threads to probe on (0 = the kernels' threads, GOMAXPROCS)")
	cmd.Flags().Float64Var(&seconds, "seconds", 5, "total probing time")
	cmd.Flags().BoolVar(&replace, "replace", false, "store the measurement even when the cache holds a higher peak")
	return cmd
}
