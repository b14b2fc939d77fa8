package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kestrel-lm/kestrel/cmd/kestrel/internal/show"
	"github.com/kestrel-lm/kestrel/internal/drill"
)

func newDrillCmd() *cobra.Command {
	var o drill.Options
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "drill --config RUN.toml [--faults …] [--moments …] [--steps N] [--hog] [--json]",
		Short: "fire drills: inject faults into short branches of your config and check the alerts and the rescue",
		Long:  helpText("drill"),
		Args:  cobra.NoArgs,
	}
	cfgf := addConfigFlags(cmd, "the run config to drill (TOML); the branches are it, made short")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		cfg, err := cfgf.load()
		if err != nil {
			return err
		}
		w := cmd.OutOrStdout()
		o.Config = cfg
		if !asJSON {
			fmt.Fprintf(w, "drill: branches of %d steps; each row is one branch (a fault at a moment)\n", o.Steps)
			o.Progress = func(r drill.Row) { fmt.Fprintln(cmd.ErrOrStderr(), "drill:", show.DrillRow(r)) }
		}
		rep, err := drill.Run(cmd.Context(), o)
		if rep == nil {
			return fmt.Errorf("drill: %w", err)
		}
		if werr := show.Drill(w, rep, asJSON); werr != nil || err != nil {
			return errors.Join(werr, err)
		}
		if bad := rep.Failures(); len(bad) > 0 {
			return fmt.Errorf("drill: %d of %d branches missed the mark: %s", len(bad), len(rep.Rows), strings.Join(bad, "; "))
		}
		return nil
	}
	f := cmd.Flags()
	f.StringSliceVar(&o.Faults, "faults", nil, "faults to inject (default all): "+strings.Join(drill.AllFaults, ", "))
	f.StringSliceVar(&o.Moments, "moments", nil, "moments to inject them at (default all): "+strings.Join(drill.AllMoments, ", "))
	f.IntVar(&o.Steps, "steps", 100, "steps of each branch (at least 40)")
	f.BoolVar(&o.Hog, "hog", false, "also run the healthy branch beside a CPU hog (one busy process per core)")
	f.StringVar(&o.Dir, "out", "", "keep the branches' run directories here (default: a temporary directory, removed)")
	f.BoolVar(&asJSON, "json", false, "print the report as one JSON object")
	return cmd
}
