package main

import (
	"github.com/spf13/cobra"

	"github.com/kestrel-lm/kestrel/internal/sweep"
)

func newSweepCmd() *cobra.Command {
	var set []string
	var o sweep.Options
	cmd := &cobra.Command{
		Use:   "sweep --config RUN.toml --set section.key=v1,v2,… [--set …] --steps N [--out DIR] [--parallel P]",
		Short: "train a grid of short runs (e.g. an LR sweep), each its own run directory, and print a table",
		Long:  helpText("sweep"),
		Args:  cobra.NoArgs,
	}
	cf := addConfigFlags(cmd, "run config (TOML) every point starts from")
	f := cmd.Flags()
	f.StringArrayVar(&set, "set", nil, "section.key=v1,v2,…: one axis of the grid (repeatable; the grid is every combination)")
	f.IntVar(&o.Steps, "steps", 0, "train.steps of every run (0: the config's)")
	f.StringVar(&o.Out, "out", "", "the sweep's directory, one run directory per point (default runs/sweep-<run.name>)")
	f.IntVar(&o.Parallel, "parallel", 1, "points trained at a time: 1 in this process; P > 1 as kestrel train processes on one thread each")
	cmd.RunE = func(cmd *cobra.Command, _ []string) (err error) {
		if o.Base, err = cf.load(); err != nil {
			return err
		}
		if o.Axes, err = sweep.ParseSet(set); err != nil {
			return err
		}
		o.Stderr = cmd.ErrOrStderr()
		res, err := sweep.Run(cmd.Context(), o)
		if err != nil {
			return err
		}
		if err := sweep.WriteTable(cmd.OutOrStdout(), res); err != nil {
			return err
		}
		return sweep.Failed(res)
	}
	return cmd
}
