package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kestrel-lm/kestrel/cmd/kestrel/internal/flagx"
	"github.com/kestrel-lm/kestrel/cmd/kestrel/internal/show"
	"github.com/kestrel-lm/kestrel/internal/rewind"
	"github.com/kestrel-lm/kestrel/internal/run"
)

func newRewindCmd() *cobra.Command {
	o := rewind.Options{CheckSet: run.CheckRewindSet, CheckPlan: run.CheckRewindPlan}
	var skip string
	cmd := &cobra.Command{
		Use:   "rewind RUN --to STEP|last|last-good [--skip-steps A:B] [--lr-scale X --lr-steps N] [--set section.key=value …] [--reason TEXT]",
		Short: "roll a run back to an earlier checkpoint, optionally skipping data and changing knobs",
		Long:  helpText("rewind"),
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.To == "" {
				return fmt.Errorf("rewind: --to is required (last, last-good, a step, or a checkpoint directory)")
			}
			var err error
			if o.SkipFrom, o.SkipTo, err = flagx.StepRange("--skip-steps", skip); err != nil {
				return fmt.Errorf("rewind: %w", err)
			}
			iv, err := rewind.Rewind(args[0], o)
			if err != nil {
				return err
			}
			show.Rewind(cmd.OutOrStdout(), args[0], iv)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.To, "to", "", "checkpoint to go back to: last, last-good (newest confirmed), a step N (newest at or before N), a checkpoint directory, or init (the initial weights)")
	f.StringVar(&skip, "skip-steps", "", "A:B: skip the batches of training steps A..B (A after the checkpoint, B ≤ 2147483647)")
	f.Float64Var(&o.LRScale, "lr-scale", 0, "multiply the learning rate by X after the checkpoint (0 or 1: unchanged)")
	f.IntVar(&o.LRSteps, "lr-steps", 0, "how many steps --lr-scale lasts (0: until the next rewind)")
	f.StringArrayVar(&o.SetFlags, "set", nil, "section.key=value: a config knob changed from the checkpoint on, type- and range-checked (repeatable)")
	f.StringVar(&o.Reason, "reason", "", "why (recorded in interventions.jsonl, shown on the dashboard and in the report)")
	return cmd
}
