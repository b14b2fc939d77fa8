package main

import (
	"github.com/spf13/cobra"

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
		Long: `Run the whole kestrel pipeline on the shipped data with the embedded configs
(configs/data-demo.toml and configs/demo.toml):

  1. prepare   mixed corpus (web, books, wiki, math, code) → filters → dedup →
               decontamination against GSM8K test / HellaSwag / PIQA → BPE
               tokenizer (vocab 8192) → shards                    (datasets/demo)
  2. train     a small Llama-style model with QK-Norm, z-loss, WSD, update
               clipping, skip-step and EMA, switching to a cooldown mix for
               the decay, with the monitor on                       (runs/demo)
  3. report    runs/demo/report/report.md with plots, alerts, data report,
               samples at several temperatures and the run manifest

Interrupt it (Ctrl-C) and run it again to continue where it stopped: a
prepared dataset whose fingerprint matches is reused and training resumes from
its checkpoint. --quick runs a small version in a couple of minutes (make test
runs it as a smoke test).`,
		Args: cobra.NoArgs,
	}
	cf := addConfigFlags(cmd, "extra config overlaid on the embedded demo configs (optional)")
	cmd.Flags().BoolVar(&quick, "quick", false, "small, fast version (smoke test, a few minutes)")
	cmd.Flags().BoolVar(&dash, "dash", false, "serve the live dashboard while training")
	cmd.Flags().BoolVar(&forcePrep, "force-prepare", false, "rebuild the dataset even when it is up to date")
	cmd.Flags().StringVar(&dataOut, "data-out", "", "dataset directory (default datasets/demo, or datasets/demo-quick with --quick)")
	cmd.Flags().StringVar(&runOut, "out", "", "run directory (default runs/demo, or runs/demo-quick with --quick)")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		return run.Demo(cmd.Context(), run.DemoOptions{Quick: quick, ConfigFile: cf.path, Overrides: cf.overrides,
			Data: dataOut, Run: runOut, Dash: dash, ForcePrepare: forcePrep, Stdout: cmd.OutOrStdout(), Stderr: cmd.ErrOrStderr()})
	}
	return cmd
}
