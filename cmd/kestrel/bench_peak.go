package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/kestrel-lm/kestrel/cmd/kestrel/internal/show"
	"github.com/kestrel-lm/kestrel/internal/peak"
)

func newBenchPeakCmd() *cobra.Command {
	var (
		asJSON  bool
		threads int
		seconds float64
		replace bool
		dtype   string
	)
	cmd := &cobra.Command{
		Use:   "peak",
		Short: "measure the FMA peak carefully and cache it as this machine's mfu reference",
		Long:  helpText("bench-peak"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !(seconds > 0) {
				return fmt.Errorf("bench peak: --seconds must be > 0, got %v", seconds)
			}
			if threads < 0 {
				return fmt.Errorf("bench peak: --threads must be >= 0, got %d", threads)
			}
			r, err := peak.Bench(cmd.Context(), peak.BenchOptions{Threads: threads,
				Duration: time.Duration(seconds * float64(time.Second)), Replace: replace, DType: dtype})
			if err != nil {
				return fmt.Errorf("bench peak: %w", err)
			}
			if asJSON {
				return show.JSON(cmd.OutOrStdout(), show.PeakFields(r))
			}
			show.Peak(cmd.OutOrStdout(), r)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object")
	cmd.Flags().IntVar(&threads, "threads", 0, "threads to probe on (0 = the kernels' threads, GOMAXPROCS)")
	cmd.Flags().Float64Var(&seconds, "seconds", 5, "total probing time")
	cmd.Flags().StringVar(&dtype, "dtype", "fp32", "arithmetic to probe: fp32 (vector FMA) or bf16 (the selected bf16 GEMM's instruction: TDPBF16PS with AMX, else VDPBF16PS)")
	cmd.Flags().BoolVar(&replace, "replace", false, "store the measurement even when the cache holds a higher peak")
	return cmd
}
