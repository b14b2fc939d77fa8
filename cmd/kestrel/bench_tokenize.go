package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kestrel-lm/kestrel/cmd/kestrel/internal/flagx"
	"github.com/kestrel-lm/kestrel/cmd/kestrel/internal/show"
	"github.com/kestrel-lm/kestrel/internal/tokbench"
)

func newBenchTokenizeCmd() *cobra.Command {
	var (
		asJSON  bool
		tokPath string
		enc     string
		inputs  []string
		reps    int
		threads []int
	)
	cmd := &cobra.Command{
		Use:   "tokenize",
		Short: "BPE encode MB/s against tiktoken-go (r50k, cl100k or o200k)",
		Long:  helpText("bench-tokenize"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !cmd.Flags().Changed("tokenizer") && enc != "r50k_base" {
				tokPath = "${KESTREL_DATA}/tiktoken/" + enc + ".tiktoken"
			}
			p, err := flagx.DataPath(tokPath)
			if err != nil {
				return err
			}
			ins, err := flagx.DataPaths(inputs...)
			if err != nil {
				return err
			}
			docs, _, err := tokbench.ReadDocs(ins)
			if err != nil {
				return fmt.Errorf("bench tokenize: %w", err)
			}
			out := cmd.OutOrStdout()
			return tokbench.Run(cmd.Context(), tokbench.Options{Tokenizer: p, Encoding: enc, Docs: docs, Threads: threads, Reps: reps, Emit: func(r tokbench.Result) { show.Emit(out, asJSON, r, show.TokbenchLine(r)) }})
		},
	}
	f := cmd.Flags()
	f.BoolVar(&asJSON, "json", false, "one JSON object per line")
	f.StringVar(&tokPath, "tokenizer", "${KESTREL_DATA}/gpt2-bpe", "tokenizer files (default: GPT-2's, or the shipped rank file of --encoding)")
	f.StringVar(&enc, "encoding", "r50k_base", "tiktoken-go encoding to compare with: r50k_base | cl100k_base | o200k_base")
	f.StringSliceVar(&inputs, "input", []string{"${KESTREL_DATA}/tinyshakespeare/input.txt", "${KESTREL_DATA}/wikitext-2/valid.txt", "${KESTREL_DATA}/gsm8k/test.jsonl", "${KESTREL_DATA}/dolma-testdata/cc_en_head"}, "text to encode")
	f.IntVar(&reps, "reps", 3, "repetitions; the fastest counts")
	f.IntSliceVar(&threads, "threads", []int{1, 2}, "thread counts")
	return cmd
}
