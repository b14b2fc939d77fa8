package main

import (
	"fmt"
	"log/slog"

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
		allow0  bool
	)
	cmd := &cobra.Command{
		Use:   "watch SOURCE [-f] [--format auto|kestrel|jsonl|csv|tfevents] [--map name=field …] [--store out.sqlite] [--allow-sev0]",
		Short: "apply the ICU-panel alert rules and spike classifier to any run's metrics",
		Long: `Read a run kestrel did not train — a kestrel run directory, a JSONL metrics file
from any trainer (field mapping configurable), or TensorBoard event files — and
apply the same SEV0/1/2 rules and loss-spike classifier as kestrel train,
printing alerts (follow the file with -f); --out DIR writes the metrics in
kestrel's names and the alerts where 'kestrel dash DIR' reads them.

SOURCE is a run directory (metrics.jsonl or metrics.sqlite), a .jsonl file, a
training log of llm.c (main.log: "s:N trl:X lr:Y norm:Z", "s:N tel:X") or
nanoGPT ("iter N: loss X, time Yms, mfu Z%"), a .csv export (W&B history with
_step, train/loss, _runtime, _timestamp; Keras CSVLogger), a .sqlite store, an
events.out.tfevents.* file or a directory of them (TF1 simple values and TF2 /
Keras tensor summaries; a Keras log directory's train/).

Other trainers' common names are recognised without --map: loss, train/loss,
trl, batch_loss, epoch_loss (train_loss_raw); val/loss, eval_loss, tel
(val_loss); lr (learning_rate); grad_norm, norm (grad_global_norm); iter,
_step (the step) — the aliases in docs/metrics.md. When no loss metric is
recognised, watch says so, naming the fields it saw, and exits non-zero.
Unreadable lines or records are skipped and counted (the first is named at the
end); a line over 16 MiB stops the read with an error naming it.

--map renames the source's fields to kestrel's metric names (docs/metrics.md);
nested JSON objects and arrays flatten with "/" as in kestrel dash (lr/0):
  kestrel watch log.jsonl --map step=iter --map train_loss_raw=loss \
      --map grad_global_norm=optim/grad_norm --map tokens_per_sec=tok_s
Arrays named sources, doc_ids or batch_ids describe the step's batch.

Thresholds are the [monitor] config keys (e.g. --monitor.spike_z=5).
Each alert prints one line: severity, rule, step, message, verdict.
Exit status: non-zero after any SEV0 alert (--allow-sev0 exits 0 then), when
no loss metric was recognised, or on an error.`,
		Args: cobra.ExactArgs(1),
	}
	cf := addConfigFlags(cmd, "config file whose [monitor] section to use (optional)")
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "keep reading as the source grows (Ctrl-C to stop); a source that stops writing for monitor.blackout_factor × its median interval raises SEV0 monitoring_blackout")
	cmd.Flags().StringVar(&format, "format", "auto", "source format: auto, kestrel, jsonl or tfevents")
	cmd.Flags().StringArrayVar(&maps, "map", nil, "field mapping kestrel_name=source_field (repeatable)")
	cmd.Flags().StringVar(&store, "store", "", "also write metrics, events and alerts to this SQLite store")
	cmd.Flags().StringVar(&out, "out", "", "write metrics.jsonl (kestrel names), alerts.jsonl and SEV0 incident bundles to this directory: kestrel dash OUT shows them")
	cmd.Flags().BoolVarP(&verbose, "verbose", "v", false, "also log alerts with their runbook text to stderr")
	cmd.Flags().BoolVar(&allow0, "allow-sev0", false, "exit 0 even when a SEV0 alert was raised (the alerts still print)")
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
		res, err := watchsrc.Run(cmd.Context(), args[0], cfg.Monitor, o, func(a monitor.Alert) { fmt.Fprintln(w, watchsrc.AlertLine(a, out)) })
		if res == nil {
			return err
		}
		res.WriteSummary(w)
		if n := res.Counts[monitor.SEV0]; err == nil && n > 0 && !allow0 {
			err = fmt.Errorf("watch: %d SEV0 alerts (--allow-sev0 to exit 0)", n)
		}
		return err
	}
	return cmd
}
