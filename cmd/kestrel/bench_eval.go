package main

import (
	"cmp"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kestrel-lm/kestrel/cmd/kestrel/internal/show"
	"github.com/kestrel-lm/kestrel/internal/kernels"
	"github.com/kestrel-lm/kestrel/internal/modelbench"
)

func newBenchEvalCmd() *cobra.Command {
	var (
		asJSON         bool
		preset         string
		threads, batch int
		pairs, warmup  int
		cf             *configFlags
	)
	cmd := &cobra.Command{
		Use:   "eval [--preset ref7m|demo|demo-quick | --config RUN.toml]",
		Short: "tokens/s of forward-only evaluation against a training step",
		Long:  helpText("bench-eval"),
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := modelbench.ModelConfig(preset, cf.path, cf.overrides)
			if err != nil {
				return fmt.Errorf("bench eval: %w", err)
			}
			if threads > 0 {
				kernels.SetThreads(threads)
			}
			r, err := modelbench.Eval(cmd.Context(), modelbench.EvalOptions{Model: cfg, Batch: batch, Pairs: pairs, Warmup: warmup})
			if err != nil {
				return err
			}
			name := cmp.Or(cf.path, preset)
			return show.Emit(cmd.OutOrStdout(), asJSON, show.EvalBenchFields(r, name), show.EvalBenchLine(r, name))
		},
	}
	cf = addConfigFlags(cmd, "run config whose [model] to measure (instead of --preset)")
	f := cmd.Flags()
	f.BoolVar(&asJSON, "json", false, "print one JSON object")
	f.StringVar(&preset, "preset", "ref7m", "model preset: ref7m, demo or demo-quick")
	f.IntVar(&batch, "batch", 8, "sequences per pass")
	f.IntVar(&pairs, "pairs", 5, "timed rounds (medians are reported)")
	f.IntVar(&warmup, "warmup", 1, "untimed rounds first")
	f.IntVar(&threads, "threads", 0, "worker threads (0 = GOMAXPROCS)")
	return cmd
}
