package main

import "github.com/spf13/cobra"

func newSampleCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "sample --run runs/NAME [--prompt TEXT] [--temperature T] [--top-k K] [--top-p P] [--ema]",
		Short: "generate text from a run's newest checkpoint",
		RunE: func(*cobra.Command, []string) error {
			return errNotImplemented("sample")
		},
	}
}
