package main

import (
	"github.com/spf13/cobra"

	"github.com/kestrel-lm/kestrel/cmd/kestrel/internal/show"
	"github.com/kestrel-lm/kestrel/internal/data/loader"
)

func newBenchLoaderCmd() *cobra.Command {
	var (
		dataset     string
		steps       int
		batch       int
		seqLen      int
		sources     int
		tokens      int64
		packing     string
		asJSON      bool
		permsToTest = []string{loader.PermFeistel, loader.PermLCG}
	)
	cmd := &cobra.Command{
		Use:   "loader [--dataset D] [--json]",
		Short: "loader batches/s and tokens/s (synthetic or prepared dataset), against a plain copy of the same tokens",
		Long:  helpText("bench-loader"),
		Args:  cobra.NoArgs,
	}
	cf := addConfigFlags(cmd, "run config (TOML) for --dataset mode")
	f := cmd.Flags()
	f.StringVar(&dataset, "dataset", "", "prepared dataset directory (default: synthetic in-memory data)")
	f.IntVar(&steps, "steps", 300, "batches to time per measurement")
	f.IntVar(&batch, "batch", 32, "sequences per batch")
	f.IntVar(&seqLen, "seq-len", 512, "tokens per sequence")
	f.IntVar(&sources, "sources", 3, "synthetic: number of sources")
	f.Int64Var(&tokens, "tokens", 4_000_000, "synthetic: tokens per source")
	f.StringVar(&packing, "packing", loader.PackConcat, "concat | bos")
	f.BoolVar(&asJSON, "json", false, "print JSON lines")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		cfg, err := cf.load()
		if err != nil {
			return err
		}
		ds, name, err := loader.BenchDataset(dataset, sources, tokens, seqLen)
		if err != nil {
			return err
		}
		w := cmd.OutOrStdout()
		return loader.Bench(cmd.Context(), ds, cfg.Data, loader.BenchOptions{
			Steps: steps, Batch: batch, SeqLen: seqLen, Packing: packing, Permutations: permsToTest, Seed: cfg.Run.Seed,
			Emit: func(r loader.BenchResult) error {
				return show.Emit(w, asJSON, show.LoaderFields(r, name), show.LoaderLine(r))
			},
		})
	}
	return cmd
}
