package main

import (
	"log/slog"
	"os"

	"github.com/kestrel-lm/kestrel/cmd/kestrel/internal/show"
	"github.com/kestrel-lm/kestrel/internal/run"

	"github.com/spf13/cobra"
)

func newReportCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "report RUN",
		Short: "rebuild a run's report/ (verdict, plots, alerts, interventions, data, samples, manifest); a live run is read, never locked",
		Long:  helpText("report"),
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			sum, err := run.WriteReport(args[0], run.ReportOptions{Logger: slog.New(slog.NewTextHandler(os.Stderr, nil))})
			if err == nil {
				show.Verdict(cmd.OutOrStdout(), sum)
			}
			return err
		},
	}
}
