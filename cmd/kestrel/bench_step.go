package main

import (
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/kestrel-lm/kestrel/cmd/kestrel/internal/show"
	"github.com/kestrel-lm/kestrel/internal/stepbench"
)

func newBenchStepCmd() *cobra.Command {
	var (
		asJSON, ops          bool
		preset, precision    string
		steps, batch, warmup int
		threads              []int
		cf                   *configFlags
	)
	cmd := &cobra.Command{
		Use:   "step",
		Short: "tokens/s, MFU, step time and peak RSS of a training step (preset or config)",
		Long:  helpText("bench-step"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, err := stepbench.LookupStepPreset(preset)
			if err != nil {
				return err
			}
			opt := stepbench.StepBenchOptions{Model: p.Model, Batch: p.Batch, Steps: steps, Warmup: warmup}
			if cf.path != "" {
				cfg, err := cf.load()
				if err != nil {
					return err
				}
				p.Name, opt = "config:"+filepath.Base(cf.path), stepbench.StepBenchFromRun(cfg.Model, cfg.Train, steps, warmup)
			}
			if batch > 0 {
				opt.Batch = batch
			}
			opt.Ops = ops
			if precision != "" {
				opt.Precision = precision
			}
			rs, err := stepbench.BenchStepThreads(cmd.Context(), opt, threads)
			if e := show.StepBench(cmd.OutOrStdout(), rs, p.Name, asJSON); e != nil {
				return e
			}
			return err
		},
	}
	cf = addConfigFlags(cmd, "a run config whose [model] and micro-batch to benchmark (instead of --preset)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object per thread count (and with --ops one per op)")
	cmd.Flags().StringVar(&preset, "preset", "ref7m", "model preset: ref7m, 30m or 124m")
	cmd.Flags().IntVar(&steps, "steps", 5, "timed steps (the median is reported)")
	cmd.Flags().IntVar(&warmup, "warmup", 1, "untimed steps first (arena allocation, page faults)")
	cmd.Flags().IntSliceVar(&threads, "threads", nil, "worker thread counts, e.g. 1,2 (empty = GOMAXPROCS)")
	cmd.Flags().IntVar(&batch, "batch", 0, "sequences per step (0 = the preset's or the config's)")
	cmd.Flags().StringVar(&precision, "precision", "", "the products' arithmetic: fp32 or bf16 (empty = the config's train.precision, else fp32); bf16's MFU divides by the bf16 peak")
	cmd.Flags().BoolVar(&ops, "ops", false, "also print where the step's time goes: self time, share and GFLOP/s per op")
	return cmd
}
