package main

import "github.com/spf13/cobra"

func newWatchCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "watch SOURCE [-f]",
		Short: "apply the ICU-panel alert rules and spike classifier to any run's metrics",
		Long: `Read a run kestrel did not train — a kestrel run directory, a JSONL metrics file
from any trainer (field mapping configurable), or TensorBoard event files — and
apply the same SEV0/1/2 rules and loss-spike classifier as kestrel train,
printing alerts (follow the file with -f) and optionally writing a metric
store the dashboard reads.`,
		RunE: func(*cobra.Command, []string) error {
			return errNotImplemented("watch")
		},
	}
}
