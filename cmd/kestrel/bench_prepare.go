package main

import (
	"github.com/spf13/cobra"

	"github.com/kestrel-lm/kestrel/cmd/kestrel/internal/show"
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
		Long:  helpText("bench-prepare"),
		Args:  cobra.NoArgs,
	}
	f := cmd.Flags()
	f.IntVar(&mb, "mb", 200, "corpus size in MB")
	f.IntVar(&workers, "workers", 0, "worker goroutines (0 = GOMAXPROCS)")
	f.BoolVar(&asJSON, "json", false, "print JSON lines")
	f.StringVar(&keep, "dir", "", "generate into this directory and keep it (default: a temporary directory, removed)")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		return prepare.RunBench(cmd.Context(), prepare.BenchRun{MB: mb, Workers: workers, Dir: keep}, func(r prepare.BenchResult) { show.PrepareBench(cmd.OutOrStdout(), asJSON, r) })
	}
	return cmd
}
