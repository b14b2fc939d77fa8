package main

import "github.com/spf13/cobra"

func newDataInspectCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "inspect DATASET",
		Short: "decode sample documents of a prepared dataset back to text, with token counts and shares",
		RunE: func(*cobra.Command, []string) error {
			return errNotImplemented("data inspect")
		},
	}
}
