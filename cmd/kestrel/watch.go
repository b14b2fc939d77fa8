package main

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

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
		src := args[0]
		mapping := map[string]string{}
		for _, m := range maps {
			k, v, ok := strings.Cut(m, "=")
			if !ok || k == "" || v == "" {
				return fmt.Errorf("watch: --map %q: want kestrel_name=source_field", m)
			}
			mapping[k] = v
		}
		mc := cfg.Monitor
		mc.SQLite, mc.TensorBoard, mc.TraceSteps, mc.PrometheusAddr = false, false, 0, ""
		mc.PauseOnSEV0 = false
		opts := monitor.Options{RunDir: out, NoFileSinks: true, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
		if verbose {
			opts.Logger = slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil))
		}
		if out != "" {
			if st, err := os.Stat(filepath.Join(src, "config.toml")); err == nil && !st.IsDir() {
				opts.ConfigTOML, _ = os.ReadFile(filepath.Join(src, "config.toml"))
			}
		}
		if out != "" {
			// metrics.jsonl in kestrel's names beside alerts.jsonl, so
			// `kestrel dash OUT` shows the run with its alerts.
			if err := os.MkdirAll(out, 0o755); err != nil {
				return fmt.Errorf("watch: %w", err)
			}
			if same, _ := sameDir(src, out); same {
				return fmt.Errorf("watch: --out %s is the run being watched; choose another directory", out)
			}
			js, err := monitor.OpenJSONLSink(filepath.Join(out, "metrics.jsonl"))
			if err != nil {
				return fmt.Errorf("watch: %w", err)
			}
			opts.Sinks = append(opts.Sinks, js)
		}
		if store != "" {
			s, err := monitor.OpenStore(store)
			if err != nil {
				return fmt.Errorf("watch: %w", err)
			}
			s.SetRunInfo("source", src)
			opts.Sinks = append(opts.Sinks, s)
		}
		m, err := monitor.New(mc, opts)
		if err != nil {
			return fmt.Errorf("watch: %w", err)
		}
		w := cmd.OutOrStdout()
		counts := map[monitor.Severity]int{}
		werr := watchsrc.Watch(cmd.Context(), src, watchsrc.Options{Format: format, Map: mapping, Follow: follow}, m, func(a monitor.Alert) {
			counts[a.Severity]++
			line := fmt.Sprintf("%s %-22s step %-8d %s", a.Severity, a.Rule, a.Step, a.Message)
			if a.Evidence != "" {
				line += " [evidence " + filepath.Join(out, a.Evidence) + "]"
			}
			fmt.Fprintln(w, line)
		})
		cerr := m.Close()
		fmt.Fprintf(w, "watch: %d SEV0, %d SEV1, %d SEV2 alerts\n", counts[monitor.SEV0], counts[monitor.SEV1], counts[monitor.SEV2])
		if werr != nil {
			return fmt.Errorf("watch: %w", werr)
		}
		if cerr != nil {
			return fmt.Errorf("watch: %w", cerr)
		}
		return nil
	}
	return cmd
}

// sameDir reports whether a and b name the same directory.
func sameDir(a, b string) (bool, error) {
	sa, err := os.Stat(a)
	if err != nil {
		return false, err
	}
	sb, err := os.Stat(b)
	if err != nil {
		return false, err
	}
	return os.SameFile(sa, sb), nil
}
