package main

import (
	"cmp"
	"fmt"
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/kestrel-lm/kestrel/internal/dashboard"
)

func newDashCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "dash [RUN_DIR…] [--addr 127.0.0.1:8077] [--runs-dir runs]",
		Short: "serve the live web dashboard for one or many runs (read-only, loopback)",
		Long:  helpText("dash"),
	}
	cf := addConfigFlags(cmd, "config file whose [dash] section to use (optional)")
	addr := cmd.Flags().String("addr", "", "listen address (default from dash.addr: 127.0.0.1:8077)")
	runsDir := cmd.Flags().String("runs-dir", "", "directory whose subdirectories are runs (default from dash.runs_dir: runs)")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		cfg, err := cf.load()
		if err != nil {
			return err
		}
		cfg.Dash.Addr, cfg.Dash.RunsDir = cmp.Or(*addr, cfg.Dash.Addr), cmp.Or(*runsDir, cfg.Dash.RunsDir)
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
