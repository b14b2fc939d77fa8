package main

import (
	"fmt"

	"github.com/kestrel-lm/kestrel/cmd/kestrel/internal/show"
	"github.com/kestrel-lm/kestrel/internal/checkpoint"

	"github.com/spf13/cobra"
)

func newCheckpointsCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "checkpoints RUN [--json]",
		Short: "list a run's checkpoints with their health, and mark the last-good one",
		Long:  helpText("checkpoints"),
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			list, err := checkpoint.List(args[0])
			if err != nil {
				return fmt.Errorf("checkpoints: %w", err)
			}
			out := cmd.OutOrStdout()
			if asJSON {
				return show.CheckpointsJSON(out, list)
			}
			return show.Checkpoints(out, args[0], list)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "one JSON object per checkpoint, one per line")
	return cmd
}
