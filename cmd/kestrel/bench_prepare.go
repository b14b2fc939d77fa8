package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/kestrel-lm/kestrel/internal/data/prepare"
)

func newBenchPrepareCmd() *cobra.Command {
	var (
		mb      int
		workers int
		asJSON  bool
		keep    string
	)
	cmd := &cobra.Command{
		Use:   "prepare [--json] [--mb N]",
		Short: "data pipeline MB/s and peak RSS per stage on a generated corpus",
		Long: `Generates a JSONL corpus of about --mb megabytes from the shipped text
(WikiText-2, Tiny Shakespeare, GSM8K) with 5% planted exact duplicates and 5%
near-duplicates (1–10% of words edited) in a temporary directory, then times
each stage streaming the whole corpus from disk over --workers goroutines:
read (JSONL parse only: the reference every other line includes), clean,
exact_dedup, near_dedup, decontam (and its index build), and a full
kestrel prepare run. Peak RSS per stage is VmHWM, reset before each stage.
With --json, one line per stage:
{"op":"prepare","stage":…,"mb_per_s":…,"peak_rss_mb":…}.`,
		Args: cobra.NoArgs,
	}
	f := cmd.Flags()
	f.IntVar(&mb, "mb", 200, "corpus size in MB")
	f.IntVar(&workers, "workers", 0, "worker goroutines (0 = GOMAXPROCS)")
	f.BoolVar(&asJSON, "json", false, "print JSON lines")
	f.StringVar(&keep, "dir", "", "generate into this directory and keep it (default: a temporary directory, removed)")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if mb < 1 {
			return fmt.Errorf("bench prepare: --mb must be >= 1")
		}
		dir := keep
		if dir == "" {
			d, err := os.MkdirTemp("", "kestrel-bench-prepare-")
			if err != nil {
				return err
			}
			defer os.RemoveAll(d)
			dir = d
		} else if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		files, exact, near, err := prepare.GenerateBenchCorpus(dir, mb, 1)
		if err != nil {
			return fmt.Errorf("bench prepare: generate corpus: %w", err)
		}
		w := cmd.OutOrStdout()
		if asJSON {
			b, _ := json.Marshal(prepare.BenchResult{Op: "prepare", Stage: "generate", MB: float64(mb), Note: fmt.Sprintf("%d files, planted %d exact and %d near duplicates", len(files), exact, near)})
			fmt.Fprintln(w, string(b))
		} else {
			fmt.Fprintf(w, "corpus: %d MB in %d files, planted %d exact and %d near duplicates\n", mb, len(files), exact, near)
		}
		return prepare.Bench(cmd.Context(), files, workers, filepath.Join(dir, "out"), func(r prepare.BenchResult) {
			if asJSON {
				b, _ := json.Marshal(r)
				fmt.Fprintln(w, string(b))
				return
			}
			if r.Stage == "summary" {
				fmt.Fprintf(w, "%s\n", r.Note)
				return
			}
			fmt.Fprintf(w, "%-15s %8.1f MB/s  %7.2fs  peak RSS %7.1f MB  %s\n", r.Stage, r.MBPerS, r.Seconds, r.PeakRSSMB, r.Note)
		})
	}
	return cmd
}
