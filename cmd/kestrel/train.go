package main

import "github.com/spf13/cobra"

func newTrainCmd() *cobra.Command {
	var out string
	var fresh bool
	cmd := &cobra.Command{
		Use:   "train --config RUN.toml --out runs/NAME",
		Short: "train a transformer; resumes from the newest valid checkpoint in --out",
		Long: `Train a Llama/Qwen3-style transformer on a byte-level text file or a prepared
dataset, with AdamW, LR schedules (cosine, WSD, WSD-S, multi-step, re-warmup),
gradient and update-norm clipping, skip-bad-steps, z-loss, EMA weights, and
checkpoints with bit-exact resume. If --out already holds a checkpoint the run
resumes from the newest valid one; Ctrl-C writes a checkpoint and exits 0.
Every step appends a JSON line to <out>/metrics.jsonl.`,
		Args: cobra.NoArgs,
	}
	cf := addConfigFlags(cmd, "run config (TOML)")
	cmd.Flags().StringVar(&out, "out", "", "run directory (default runs/<run.name>)")
	cmd.Flags().BoolVar(&fresh, "fresh", false, "refuse to touch an existing run directory instead of resuming")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		_ = cf
		return errNotImplemented("train")
	}
	return cmd
}
