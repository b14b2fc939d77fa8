package main

import "github.com/spf13/cobra"

func newDemoCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "demo [--quick]",
		Short: "run the whole pipeline on the shipped data and write a run report",
		Long: `Run prepare → tokenizer → train → report on the shipped data with embedded
defaults, leaving a dataset in datasets/demo and a run with its report in
runs/demo. Interrupt it and run it again to continue where it stopped.`,
		RunE: func(*cobra.Command, []string) error {
			return errNotImplemented("demo")
		},
	}
}
