package main

import "github.com/spf13/cobra"

func newDataCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "data",
		Short: "inspect prepared datasets and how the loader shuffles them",
		Long:  helpText("data"),
	}
	cmd.AddCommand(newDataInspectCmd(), newDataShuffleReportCmd(), newDataDiffCmd())
	return cmd
}
