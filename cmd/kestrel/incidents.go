package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kestrel-lm/kestrel/cmd/kestrel/internal/show"
	"github.com/kestrel-lm/kestrel/internal/run"
)

func newIncidentsCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "incidents RUN [--json] | incidents close RUN ID --reason TEXT",
		Short: "list a run's model incidents and whether a rescue or a person closed them",
		Long:  helpText("incidents"),
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			list, err := run.Incidents(args[0])
			return show.Incidents(cmd.OutOrStdout(), args[0], list, err, asJSON)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "one JSON object per incident, one per line")
	var reason string
	closeCmd := &cobra.Command{
		Use:   "close RUN ID --reason TEXT",
		Short: "close an open incident: the keep policy no longer holds the checkpoint from before it",
		Long:  helpText("incidents-close"),
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := run.CloseIncident(args[0], args[1], reason)
			if err == nil {
				_, err = fmt.Fprintf(cmd.OutOrStdout(), "closed %s (steps %d-%d): %s\n", c.ID, c.FromStep, c.ToStep, c.Reason)
			}
			return err
		},
	}
	closeCmd.Flags().StringVar(&reason, "reason", "", "why the incident needs no (further) rescue (required, recorded)")
	cmd.AddCommand(closeCmd)
	return cmd
}
