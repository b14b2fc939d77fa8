package main

import (
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
		return prepare.RunBench(cmd.Context(), cmd.OutOrStdout(), prepare.BenchRun{MB: mb, Workers: workers, Dir: keep, JSON: asJSON})
	}
	return cmd
}
