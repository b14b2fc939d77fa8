package main

import (
	"fmt"
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/kestrel-lm/kestrel/cmd/kestrel/internal/show"
	"github.com/kestrel-lm/kestrel/internal/watchsrc"
	"github.com/kestrel-lm/kestrel/monitor"
)

func newWatchCmd() *cobra.Command {
	var (
		follow                 bool
		format                 string
		maps                   []string
		store                  string
		out                    string
		verbose                bool
		allow0, allowBad, over bool // over: --overwrite
	)
	cmd := &cobra.Command{
		Use:   "watch SOURCE [-f] [--format auto|kestrel|jsonl|csv|tfevents] [--map name=field …] [--store out.sqlite] [--out DIR [--overwrite]] [--allow-sev0] [--allow-bad]",
		Short: "apply the ICU-panel alert rules and spike classifier to any run's metrics",
		Long:  helpText("watch"),
		Args:  cobra.ExactArgs(1),
	}
	cf := addConfigFlags(cmd, "config file whose [monitor] section to use (optional)")
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "keep reading as the source grows (Ctrl-C to stop); a source that stops writing for monitor.blackout_factor × its median interval raises SEV0 monitoring_blackout")
	cmd.Flags().StringVar(&format, "format", "auto", "source format: auto, kestrel, jsonl or tfevents")
	cmd.Flags().StringArrayVar(&maps, "map", nil, "field mapping kestrel_name=source_field (repeatable)")
	cmd.Flags().StringVar(&store, "store", "", "also write metrics, events and alerts to this SQLite store")
	cmd.Flags().StringVar(&out, "out", "", "write metrics.jsonl (kestrel names), alerts.jsonl and SEV0 incident bundles to this directory (new, empty or an earlier watch's; never the source's or a run's): kestrel dash OUT shows them")
	cmd.Flags().BoolVar(&over, "overwrite", false, "let --out be a non-empty directory that is not an earlier watch's (never the source's, a run's or a live one's)")
	cmd.Flags().BoolVarP(&verbose, "verbose", "v", false, "also log alerts with their runbook text to stderr")
	cmd.Flags().BoolVar(&allow0, "allow-sev0", false, "exit 0 even when a SEV0 alert was raised (the alerts still print)")
	cmd.Flags().BoolVar(&allowBad, "allow-bad", false, "exit 0 even when bad lines or records were skipped (the summary still says so)")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		cfg, err := cf.load()
		if err != nil {
			return err
		}
		o := watchsrc.RunOptions{Options: watchsrc.Options{Format: format, Follow: follow}, Maps: maps, Out: out, Store: store, Overwrite: over}
		if verbose {
			o.Logger = slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil))
		}
		w := cmd.OutOrStdout()
		res, err := watchsrc.Run(cmd.Context(), args[0], cfg.Monitor, o, func(a monitor.Alert) { fmt.Fprintln(w, show.WatchAlert(a, out)) })
		if res == nil {
			return err
		}
		if show.Watch(w, res); err == nil {
			err = res.Exit(allow0, allowBad)
		}
		return err
	}
	return cmd
}
