package main

import (
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/spf13/cobra"

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
		Long: `Build a dataset directory from raw sources listed in a data config:
read (JSONL, text, WARC/WET, Parquet, source trees) → quality filters (Gopher,
C4, FineWeb, OLMo 2 repeated n-grams) → exact and MinHash near-duplicate removal
→ decontamination against eval sets → tokenization → llm.c-format shards with a
hashed manifest. Every rejected document is kept with its stage, rule and
reason under rejects/, and report.json plus a printed summary describe the run.

The dataset is built in a temporary directory beside --out and renamed into
place at the end, so a failed or interrupted run leaves no half dataset. A
re-run with the same config and unchanged inputs is reported as up to date
(see report.json "fingerprint"); --force rebuilds.

Output:
  docs/<source>-NNNNN.jsonl.zst   kept documents {id, source, text, meta}
  rejects/<stage>.jsonl.zst       {id, source, stage, rule, detail} per dropped document
  report.json                     counts per source and stage, reject rules, near_dup_rate,
                                  duplicate hotspots, train_val_overlap, bytes/doc percentiles
  tokenizer.json, manifest.json, shards/   with [prepare.tokenizer] mode = train | load

Across processes (docs/prepare-distributed.md): build bin/kestrel-mpi with
make build-mpi and launch it with mpirun -np N or srun; every rank reads a
size-balanced share of the inputs (large JSONL files in byte ranges) and the
result is identical to one process's (check with kestrel data diff A B).
Output and --work-dir must be on a file system every rank sees; a rerun
skips the inputs a failed run finished.`,
		Args: cobra.NoArgs,
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
			Summary: cmd.OutOrStdout(), Progress: os.Stderr, Log: slog.Default(),
		}
		_, err = prepare.RunLaunched(cmd.Context(), cfg.Prepare, prepare.DistOptions{RunOptions: ro, WorkDir: workDir, UnitBytes: int64(unitMB * (1 << 20)), Timeout: commTimeout})
		return err
	}
	return cmd
}
