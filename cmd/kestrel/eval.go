package main

import (
	"github.com/spf13/cobra"

	"github.com/kestrel-lm/kestrel/internal/eval"
)

func newEvalCmd() *cobra.Command {
	var opt eval.Options
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "eval --run RUN [--checkpoint last|last-good|step-N|DIR] [--ema] --tasks hellaswag,piqa,bpb [--limit N] [--json]",
		Short: "score a checkpoint on HellaSwag, PIQA and bits per byte (docs/eval.md)",
		Long: `Zero-shot multiple choice by log-likelihood (HellaSwag, PIQA: acc, acc_norm
with standard errors, as lm-evaluation-harness) and bits per byte on the
WikiText-2 test file, from the shipped data. --limit N takes the first N items
(bpb: windows). See docs/eval.md for the tokenisation.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opt.Status = cmd.ErrOrStderr()
			res, err := eval.Run(opt)
			if err != nil {
				return err
			}
			return res.Write(cmd.OutOrStdout(), asJSON)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opt.Run, "run", "", "run directory")
	f.StringVar(&opt.Checkpoint, "checkpoint", "last", "last, last-good, step-N or a checkpoint directory")
	f.BoolVar(&opt.EMA, "ema", false, "evaluate the EMA weights")
	f.StringSliceVar(&opt.Tasks, "tasks", []string{"hellaswag", "piqa", "bpb"}, "tasks: hellaswag, piqa, bpb, gsm8k-nll, memorization, bpb-val (docs/eval.md)")
	f.IntVar(&opt.Limit, "limit", 0, "first N items of each task (0 = all)")
	f.BoolVar(&asJSON, "json", false, "print the result as JSON")
	return cmd
}
