package main

import "github.com/spf13/cobra"

func newPrepareCmd() *cobra.Command {
	var out string
	var strict bool
	cmd := &cobra.Command{
		Use:   "prepare --config DATA.toml --out datasets/NAME",
		Short: "build a training dataset: read sources, filter, dedup, decontaminate, tokenize, shard",
		Long: `Build a dataset directory from raw sources listed in a data config:
read (JSONL, text, WARC/WET, Parquet, source trees) → quality filters (Gopher,
C4, FineWeb, OLMo 2 repeated n-grams) → exact and MinHash near-duplicate removal
→ decontamination against eval sets → tokenization → llm.c-format shards with a
hashed manifest. Every rejected document is kept with its stage, rule and
reason under rejects/, and report.json plus a printed summary describe the run.`,
		Args: cobra.NoArgs,
	}
	cf := addConfigFlags(cmd, "data config (TOML) listing sources and stages")
	cmd.Flags().StringVar(&out, "out", "", "output dataset directory")
	cmd.Flags().BoolVar(&strict, "strict", false, "treat malformed input as an error instead of counting and skipping it")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		_ = cf
		return errNotImplemented("prepare")
	}
	return cmd
}
