package main

import (
	"github.com/spf13/cobra"

	"github.com/kestrel-lm/kestrel/cmd/kestrel/internal/flagx"
	"github.com/kestrel-lm/kestrel/cmd/kestrel/internal/show"
	"github.com/kestrel-lm/kestrel/internal/config"
	"github.com/kestrel-lm/kestrel/internal/data/loader/shufflereport"
)

func newDataShuffleReportCmd() *cobra.Command {
	var (
		ro                 shufflereport.Options
		dataset, perms, by string
		synthetic, asJSON  bool
	)
	cmd := &cobra.Command{
		Use:   "shuffle-report (--dataset D | --synthetic) [--permutation feistel,feistel-mix,lcg] [--out report.png [--overwrite]]",
		Short: "measure batch composition over steps for the Feistel or LCG permutation, with a PNG plot",
		Long:  helpText("data-shuffle-report"),
		Args:  cobra.NoArgs,
	}
	cf := addConfigFlags(cmd, "run config (TOML) for --dataset mode: data mixture, model.seq_len, run.seed")
	f := cmd.Flags()
	f.StringVar(&dataset, "dataset", "", "prepared dataset directory (default data.path of the config)")
	f.StringVar(&perms, "permutation", "feistel,feistel-mix,lcg", "permutations to compare, comma-separated: feistel | feistel-mix | lcg")
	f.BoolVar(&synthetic, "synthetic", false, "use synthetic topic-sorted data instead of a dataset")
	f.Int64Var(&ro.Items, "items", 1_000_003, "synthetic: number of items")
	f.IntVar(&ro.Blocks, "blocks", 16, "blocks (topics) the stored order is cut into; with --by source, unused")
	f.IntVar(&ro.Steps, "steps", 2000, "steps (batches) to measure")
	f.IntVar(&ro.Batch, "batch", 32, "sequences per batch")
	f.Int64Var(&ro.LCGStride, "lcg-stride", 0, "LCG multiplier (0 = data.lcg_stride, and if that is 0 drawn from the seed)")
	f.StringVar(&by, "by", "block", "dataset mode: label rows by block (of each source's stored order) or source")
	f.IntVar(&ro.Lags, "lags", 50, "autocorrelation lags to compute")
	f.StringVar(&ro.Out, "out", "shuffle-report.png", "PNG plot to write (empty = none; an existing file only if this command wrote it)")
	f.BoolVar(&ro.Overwrite, "overwrite", false, "replace an existing --out that this command did not write")
	f.BoolVar(&asJSON, "json", false, "print one JSON object per permutation instead of a table")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		cfg, err := cf.load()
		if err != nil {
			return err
		}
		ro.Inputs = []string{cf.path}
		if cfg, err = config.Resolve(cfg, "data"); err != nil {
			return err
		}
		if dataset, err = flagx.DataPath(dataset); err != nil {
			return err
		}
		if err := ro.ForRun(perms, by, cfg.Data, cfg.Model.SeqLen, cfg.Run.Seed, dataset, synthetic); err != nil {
			return err
		}
		res, err := shufflereport.Report(ro)
		if perr := show.ShuffleReport(cmd.OutOrStdout(), res, asJSON); err == nil {
			err = perr
		}
		return err
	}
	return cmd
}
