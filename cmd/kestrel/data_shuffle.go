package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kestrel-lm/kestrel/internal/data/loader/shufflereport"
)

// shuffleOpts are the flags of `kestrel data shuffle-report`.
type shuffleOpts struct {
	dataset   string
	perms     string
	synthetic bool
	items     int64
	blocks    int
	steps     int
	batch     int
	stride    int64
	by        string
	lags      int
	out       string
	json      bool
}

func newDataShuffleReportCmd() *cobra.Command {
	var o shuffleOpts
	cmd := &cobra.Command{
		Use:   "shuffle-report (--dataset D | --synthetic) [--permutation feistel,feistel-mix,lcg] [--out report.png]",
		Short: "measure batch composition over steps for the Feistel or LCG permutation, with a PNG plot",
		Long: `How i.i.d. are the batches? For each permutation, label every row of every
batch by the block of the data it comes from (the data in stored order cut
into --blocks equal ranges: topics, if it is sorted by topic) or by source,
and report:

  lag1 / max|acf|   autocorrelation of the per-batch block shares across steps,
                    as deviations from the mixture weights in force at each step
                    (a data stage's planned change is not drift); ~0 for i.i.d.
                    batches, near 1 when batches drift in phases
  max_run           longest run of consecutive batches in which one block holds
                    ≥ 50% of the rows
  mean_max_share    mean over batches of the largest block share
  mean_tv           mean total-variation distance of a batch from the overall mix

--synthetic needs no dataset: items 0..N-1 sorted into --blocks topics, one
source, shuffled exactly as the loader shuffles a source. --dataset runs the
loader itself (with the config's mixture, seq_len and seed). The PNG shows
the mean block index of each batch (i.i.d. batches scatter around the
middle; phases are flat stretches) and the autocorrelation by lag, one line
per permutation. Marin's phases: --synthetic --lcg-stride 3.`,
		Args: cobra.NoArgs,
	}
	cf := addConfigFlags(cmd, "run config (TOML) for --dataset mode: data mixture, model.seq_len, run.seed")
	f := cmd.Flags()
	f.StringVar(&o.dataset, "dataset", "", "prepared dataset directory (default data.path of the config)")
	f.StringVar(&o.perms, "permutation", "feistel,feistel-mix,lcg", "permutations to compare, comma-separated: feistel | feistel-mix | lcg")
	f.BoolVar(&o.synthetic, "synthetic", false, "use synthetic topic-sorted data instead of a dataset")
	f.Int64Var(&o.items, "items", 1_000_003, "synthetic: number of items")
	f.IntVar(&o.blocks, "blocks", 16, "blocks (topics) the stored order is cut into; with --by source, unused")
	f.IntVar(&o.steps, "steps", 2000, "steps (batches) to measure")
	f.IntVar(&o.batch, "batch", 32, "sequences per batch")
	f.Int64Var(&o.stride, "lcg-stride", 0, "LCG multiplier (0 = data.lcg_stride, and if that is 0 drawn from the seed)")
	f.StringVar(&o.by, "by", "block", "dataset mode: label rows by block (of each source's stored order) or source")
	f.IntVar(&o.lags, "lags", 50, "autocorrelation lags to compute")
	f.StringVar(&o.out, "out", "shuffle-report.png", "PNG plot to write (empty = none)")
	f.BoolVar(&o.json, "json", false, "print one JSON object per permutation instead of a table")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		cfg, err := cf.load()
		if err != nil {
			return err
		}
		if o.steps < 2 || o.batch < 1 || o.blocks < 1 || o.lags < 1 {
			return fmt.Errorf("shuffle-report: need --steps ≥ 2, --batch ≥ 1, --blocks ≥ 1, --lags ≥ 1")
		}
		if o.by != "block" && o.by != "source" {
			return fmt.Errorf("shuffle-report: --by %q: want block or source", o.by)
		}
		if o.stride == 0 {
			o.stride = cfg.Data.LCGStride
		}
		ro := shufflereport.Options{Permutations: strings.Split(o.perms, ","), Steps: o.steps, Batch: o.batch, Blocks: o.blocks,
			Lags: o.lags, LCGStride: o.stride, Items: o.items, BySource: o.by == "source", Data: cfg.Data, SeqLen: cfg.Model.SeqLen, RunSeed: cfg.Run.Seed}
		if !o.synthetic {
			path := o.dataset
			if path == "" {
				path = cfg.Data.Path
			}
			if path == "" {
				return fmt.Errorf("shuffle-report: give --dataset DIR (or data.path), or --synthetic")
			}
			if ro.Dataset, err = openDataset(path); err != nil {
				return err
			}
		}
		comps, labels, err := shufflereport.Run(ro)
		if err != nil {
			return fmt.Errorf("shuffle-report: %w", err)
		}
		if err := shufflereport.Write(cmd.OutOrStdout(), comps, o.json); err != nil {
			return err
		}
		if o.out != "" {
			if err := shufflereport.Plot(o.out, comps, labels); err != nil {
				return err
			}
			if !o.json {
				fmt.Fprintf(cmd.OutOrStdout(), "plot: %s\n", o.out)
			}
		}
		return nil
	}
	return cmd
}
