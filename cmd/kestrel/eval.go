package main

import (
	"github.com/spf13/cobra"

	"github.com/kestrel-lm/kestrel/cmd/kestrel/internal/flagx"
	"github.com/kestrel-lm/kestrel/cmd/kestrel/internal/show"
	"github.com/kestrel-lm/kestrel/internal/eval"
)

func newEvalCmd() *cobra.Command {
	var opt eval.Options
	var asJSON bool
	var heldout []string
	cmd := &cobra.Command{
		Use:   "eval --run RUN [--checkpoint last|last-good|step-N|DIR] [--ema] --tasks hellaswag,piqa,bpb,gsm8k-nll,memorization,bpb-val,heldout [--heldout NAME=PATH]... [--heldout-bytes N] [--limit N] [--json] [--strict]",
		Short: "score a checkpoint on HellaSwag, PIQA, bits per byte (yours too), GSM8K, memorization (docs/eval.md)",
		Long:  helpText("eval"),
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opt.Status = cmd.ErrOrStderr()
			for _, s := range heldout {
				h, err := flagx.Heldout(s)
				if err != nil {
					return err
				}
				opt.Heldout = append(opt.Heldout, h)
			}
			res, err := eval.Run(opt)
			if err != nil {
				return err
			}
			return show.Eval(cmd.OutOrStdout(), res, asJSON)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opt.Run, "run", "", "run directory")
	f.StringVar(&opt.Checkpoint, "checkpoint", "last", "last, last-good, step-N or a checkpoint directory")
	f.BoolVar(&opt.EMA, "ema", false, "evaluate the EMA weights")
	f.StringVar(&opt.Precision, "precision", "fp32", "the forward's products: fp32, or bf16 (bf16 inputs, float32 sums; needs avx512_bf16)")
	f.StringSliceVar(&opt.Tasks, "tasks", []string{"hellaswag", "piqa", "bpb"}, "tasks: hellaswag, piqa, bpb, gsm8k-nll, memorization, bpb-val, heldout (the run's [eval] heldout sets; docs/eval.md)")
	f.StringArrayVar(&heldout, "heldout", nil, "a held-out text to score as bits per byte, NAME=PATH (repeatable; adds the task heldout; replaces the run's set of that name)")
	f.IntVar(&opt.HeldoutBytes, "heldout-bytes", -1, "bytes scored per held-out set (0 = the whole file; -1 = the run's eval.heldout_bytes, as the loop scored them)")
	f.IntVar(&opt.Limit, "limit", 0, "first N items of each task (0 = all)")
	f.BoolVar(&asJSON, "json", false, "print the result as JSON")
	f.StringVar(&opt.Dump, "dump", "", "write every multiple-choice request (token ids, kestrel's log-probability) as JSON lines to this file, for tools/torchref/eval_ref.py")
	f.BoolVar(&opt.Strict, "strict", false, "refuse tasks whose items could be in the run's training data (not decontaminated against them, or trained on them) instead of warning")
	return cmd
}
