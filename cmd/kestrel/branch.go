package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kestrel-lm/kestrel/internal/branch"
	"github.com/kestrel-lm/kestrel/internal/run"
)

func newBranchCmd() *cobra.Command {
	var o branch.Options
	var dash bool
	cmd := &cobra.Command{
		Use:   "branch RUN --from CHECKPOINT --out DIR --steps N [--set section.key=value …]",
		Short: "train a canary: N steps from a run's checkpoint with one or more changes, into its own directory",
		Long:  helpText("branch"),
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Parent = args[0]
			b, err := branch.Prepare(o)
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), b.Describe())
			_, err = run.Train(cmd.Context(), b.Config, b.Dir, run.Options{Dash: dash, Stdout: cmd.OutOrStdout(), Stderr: cmd.ErrOrStderr()})
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.From, "from", "", "the parent's checkpoint: last, last-good, step-N (or N), or a directory of its checkpoints/")
	f.StringVar(&o.Out, "out", "", "the branch's run directory: new, empty, or an earlier branch (replaced)")
	f.IntVar(&o.Steps, "steps", 0, "steps to train after the checkpoint's step (the branch ends at step from+N)")
	f.StringArrayVar(&o.Set, "set", nil, "section.key=value: a change from the checkpoint on, checked as kestrel rewind --set checks it; data.sources and data.stages too (repeatable)")
	f.BoolVar(&dash, "dash", false, "serve the live dashboard for the branch while it trains (at dash.addr)")
	return cmd
}
