package main

import (
	"fmt"
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/kestrel-lm/kestrel/internal/dashboard"
)

func newDashCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "dash [RUN_DIR…] [--addr 127.0.0.1:8077] [--runs-dir runs]",
		Short: "serve the live web dashboard for one or many runs (read-only, loopback)",
		Long: `Serve a web panel that reads runs the way a training engineer should: held-out
and train loss, grad and update norms with their clip thresholds, learning rate
and phase, throughput and MFU, attention vitals, data mix, probes, alerts and
classified spikes — live while the run writes, offline, from one binary.

Runs are the directories given as arguments plus every run directory under
--runs-dir. A run is read from its metrics.jsonl and alerts.jsonl, or, when it
has only a metrics.sqlite (what 'kestrel watch --store' writes for another
trainer), from that store. The server is read-only, binds to loopback by default and serves
only its own assets and the runs it was given.

API (JSON): /api/runs, /api/names?run=R, /api/metrics?run=R&names=a,b&x=step|tokens|time&max_points=N,
/api/events?run=R, /api/run?run=R, /api/stream?run=R (server-sent events). See docs/dashboard.md.`,
	}
	cf := addConfigFlags(cmd, "config file whose [dash] section to use (optional)")
	addr := cmd.Flags().String("addr", "", "listen address (default from dash.addr: 127.0.0.1:8077)")
	runsDir := cmd.Flags().String("runs-dir", "", "directory whose subdirectories are runs (default from dash.runs_dir: runs)")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		cfg, err := cf.load()
		if err != nil {
			return err
		}
		if *addr != "" {
			cfg.Dash.Addr = *addr
		}
		if *runsDir != "" {
			cfg.Dash.RunsDir = *runsDir
		}
		srv, err := dashboard.New(cfg.Dash.RunsDir, args)
		if err != nil {
			return fmt.Errorf("dash: %w", err)
		}
		go srv.Preload()
		return srv.ListenAndServe(cmd.Context(), cfg.Dash.Addr, func(a string) {
			slog.Info("dashboard listening", "url", "http://"+a+"/")
			fmt.Fprintf(cmd.OutOrStdout(), "kestrel dash: http://%s/  (Ctrl-C to stop)\n", a)
		})
	}
	return cmd
}
