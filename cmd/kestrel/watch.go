package main

import (
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/kestrel-lm/kestrel/internal/watchsrc"
	"github.com/kestrel-lm/kestrel/monitor"
)

func newWatchCmd() *cobra.Command {
	var (
		follow  bool
		format  string
		maps    []string
		store   string
		out     string
		verbose bool
	)
	cmd := &cobra.Command{
		Use:   "watch SOURCE [-f] [--format auto|kestrel|jsonl|tfevents] [--map name=field …] [--store out.sqlite]",
		Short: "apply the ICU-panel alert rules and spike classifier to any run's metrics",
		Long: `Read a run kestrel did not train — a kestrel run directory, a JSONL metrics file
from any trainer (field mapping configurable), or TensorBoard event files — and
apply the same SEV0/1/2 rules and loss-spike classifier as kestrel train,
printing alerts (follow the file with -f); --out DIR writes the metrics in
kestrel's names and the alerts where 'kestrel dash DIR' reads them.

SOURCE is a run directory (metrics.jsonl or metrics.sqlite), a .jsonl file, a
.sqlite store, an events.out.tfevents.* file or a directory of them.

--map renames the source's fields to kestrel's metric names (docs/metrics.md);
nested JSON objects and arrays flatten with "/" as in kestrel dash (lr/0):
  kestrel watch log.jsonl --map step=iter --map train_loss_raw=loss \
      --map grad_global_norm=optim/grad_norm --map tokens_per_sec=tok_s
Arrays named sources, doc_ids or batch_ids describe the step's batch.

Thresholds are the [monitor] config keys (e.g. --monitor.spike_z=5).
Each alert prints one line: severity, rule, step, message, verdict.`,
		Args: cobra.ExactArgs(1),
	}
	cf := addConfigFlags(cmd, "config file whose [monitor] section to use (optional)")
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "keep reading as the source grows (Ctrl-C to stop)")
	cmd.Flags().StringVar(&format, "format", "auto", "source format: auto, kestrel, jsonl or tfevents")
	cmd.Flags().StringArrayVar(&maps, "map", nil, "field mapping kestrel_name=source_field (repeatable)")
	cmd.Flags().StringVar(&store, "store", "", "also write metrics, events and alerts to this SQLite store")
	cmd.Flags().StringVar(&out, "out", "", "write metrics.jsonl (kestrel names), alerts.jsonl and SEV0 incident bundles to this directory: kestrel dash OUT shows them")
	cmd.Flags().BoolVarP(&verbose, "verbose", "v", false, "also log alerts with their runbook text to stderr")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		cfg, err := cf.load()
		if err != nil {
			return err
		}
		o := watchsrc.RunOptions{Options: watchsrc.Options{Format: format, Follow: follow}, Maps: maps, Out: out, Store: store}
		if verbose {
			o.Logger = slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil))
		}
		w := cmd.OutOrStdout()
		counts, err := watchsrc.Run(cmd.Context(), args[0], cfg.Monitor, o, func(a monitor.Alert) {
			line := fmt.Sprintf("%s %-22s step %-8d %s", a.Severity, a.Rule, a.Step, a.Message)
			if a.Evidence != "" {
				line += " [evidence " + filepath.Join(out, a.Evidence) + "]"
			}
			fmt.Fprintln(w, line)
		})
		if counts != nil {
			fmt.Fprintf(w, "watch: %d SEV0, %d SEV1, %d SEV2 alerts\n", counts[monitor.SEV0], counts[monitor.SEV1], counts[monitor.SEV2])
		}
		return err
	}
	return cmd
}
