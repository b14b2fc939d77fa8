package main

import "github.com/spf13/cobra"

func newDashCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "dash [RUN_DIR…] [--addr 127.0.0.1:8077] [--runs-dir runs]",
		Short: "serve the live web dashboard for one or many runs (read-only, loopback)",
		Long: `Serve a web panel that reads runs the way a training engineer should: held-out
and train loss, grad and update norms with their clip thresholds, learning rate
and phase, throughput and MFU, attention vitals, data mix, probes, alerts and
classified spikes — live while the run writes, offline, from one binary.`,
		RunE: func(*cobra.Command, []string) error {
			return errNotImplemented("dash")
		},
	}
}
