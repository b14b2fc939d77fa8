package main

import "github.com/spf13/cobra"

func newDataShuffleReportCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "shuffle-report",
		Short: "measure batch composition over steps for the Feistel or LCG permutation, with a PNG plot",
		RunE: func(*cobra.Command, []string) error {
			return errNotImplemented("data shuffle-report")
		},
	}
}
