package main

import (
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/kestrel-lm/kestrel/cmd/kestrel/internal/show"
	"github.com/kestrel-lm/kestrel/internal/data/datareport"
	"github.com/kestrel-lm/kestrel/internal/data/prepare"
)

func newPrepareCmd() *cobra.Command {
	var out string
	var strict, force bool
	var workDir string
	var unitMB float64
	var commTimeout time.Duration
	cmd := &cobra.Command{
		Use:   "prepare --config DATA.toml --out datasets/NAME",
		Short: "build a training dataset: read sources, filter, dedup, decontaminate, tokenize, shard",
		Long:  helpText("prepare"),
		Args:  cobra.NoArgs,
	}
	cf := addConfigFlags(cmd, "data config (TOML) listing sources and stages")
	cmd.Flags().StringVar(&out, "out", "", "output dataset directory")
	cmd.Flags().BoolVar(&strict, "strict", false, "treat malformed input as an error instead of counting and skipping it")
	cmd.Flags().BoolVar(&force, "force", false, "rebuild even when the output is up to date")
	cmd.Flags().StringVar(&workDir, "work-dir", "", "several ranks: per-input outputs and completion markers (default .<out>.prepare-work beside --out)")
	cmd.Flags().DurationVar(&commTimeout, "comm-timeout", 0, "several ranks: stop with an error naming the rank that has not reached a collective after this long (0 = wait; mpirun still ends the job when a rank exits)")
	cmd.Flags().Float64Var(&unitMB, "unit-mb", prepare.DefaultUnitBytes>>20, "several ranks: JSONL files larger than this are cut into byte ranges of about this many MB")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if out == "" {
			return fmt.Errorf("prepare: --out is required")
		}
		cfg, err := cf.load()
		if err != nil {
			return err
		}
		ro := prepare.RunOptions{
			Out: out, Strict: strict, Force: force,
			Summary: func(r *datareport.Report) { show.PrepareSummary(cmd.OutOrStdout(), r) }, Progress: os.Stderr, Log: slog.Default(),
		}
		_, err = prepare.RunLaunched(cmd.Context(), cfg.Prepare, prepare.DistOptions{RunOptions: ro, WorkDir: workDir, UnitBytes: int64(unitMB * (1 << 20)), Timeout: commTimeout})
		return err
	}
	return cmd
}
