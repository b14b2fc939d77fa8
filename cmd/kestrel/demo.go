package main

import (
	"github.com/spf13/cobra"

	"github.com/kestrel-lm/kestrel/cmd/kestrel/internal/show"
	"github.com/kestrel-lm/kestrel/internal/data/datareport"
	"github.com/kestrel-lm/kestrel/internal/run"
)

func newDemoCmd() *cobra.Command {
	var (
		quick, dash, forcePrep bool
		dataOut, runOut        string
	)
	cmd := &cobra.Command{
		Use:   "demo [--quick] [--dash]",
		Short: "run the whole pipeline on the shipped data and write a run report",
		Long:  helpText("demo"),
		Args:  cobra.NoArgs,
	}
	cf := addConfigFlags(cmd, "extra config overlaid on the embedded demo configs (optional)")
	cmd.Flags().BoolVar(&quick, "quick", false, "small, fast version (smoke test, a few minutes)")
	cmd.Flags().BoolVar(&dash, "dash", false, "serve the live dashboard while training")
	cmd.Flags().BoolVar(&forcePrep, "force-prepare", false, "rebuild the dataset even when it is up to date")
	cmd.Flags().StringVar(&dataOut, "data-out", "", "dataset directory (default datasets/demo, or datasets/demo-quick with --quick)")
	cmd.Flags().StringVar(&runOut, "out", "", "run directory (default runs/demo, or runs/demo-quick with --quick)")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		out := cmd.OutOrStdout()
		res, err := run.Demo(cmd.Context(), run.DemoOptions{Quick: quick, ConfigFile: cf.path, Overrides: cf.overrides,
			Data: dataOut, Run: runOut, Dash: dash, ForcePrepare: forcePrep, Stdout: out, Stderr: cmd.ErrOrStderr(),
			Prepared: func(r *datareport.Report) { show.PrepareSummary(out, r) }})
		if err != nil {
			return err
		}
		return show.DemoSummary(out, res)
	}
	return cmd
}
