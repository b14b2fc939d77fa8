package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kestrel-lm/kestrel/internal/config"
	"github.com/kestrel-lm/kestrel/internal/datadir"
)

func newDemoCmd() *cobra.Command {
	var quick bool
	cmd := &cobra.Command{
		Use:   "demo [--quick]",
		Short: "run the whole pipeline on the shipped data and write a run report",
		Long: `Run prepare → tokenizer → train → report on the shipped data with embedded
defaults, leaving a dataset in datasets/demo and a run with its report in
runs/demo. Interrupt it and run it again to continue where it stopped.
--quick runs a small version in a few minutes (used by make test).`,
		Args: cobra.NoArgs,
	}
	cmd.Flags().BoolVar(&quick, "quick", false, "small, fast version (smoke test)")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		out := cmd.OutOrStdout()
		root, err := datadir.Root()
		if err != nil {
			return fmt.Errorf("demo: %w", err)
		}
		fmt.Fprintf(out, "kestrel demo: shipped data in %s\n", root)
		if _, err := config.Marshal(config.Default()); err != nil {
			return fmt.Errorf("demo: default config: %w", err)
		}
		fmt.Fprintln(out, "  ok       config: defaults resolve (kestrel config --defaults)")
		for _, s := range []string{
			"prepare  (data pipeline: issue 5/6)",
			"train    (engine + training: issues 3/4)",
			"report   (run report: issue 10)",
		} {
			fmt.Fprintf(out, "  skipped  %s — not implemented yet (see docs/roadmap.md)\n", s)
		}
		return nil
	}
	return cmd
}
