package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/kestrel-lm/kestrel/internal/generate"
)

func newSampleCmd() *cobra.Command {
	var opt generate.Options
	var run string
	cmd := &cobra.Command{
		Use:   "sample --run runs/NAME [--prompt TEXT] [--temperature T] [--top-k K] [--top-p P] [--ema]",
		Short: "generate text from a run's newest checkpoint",
		Long:  helpText("sample"),
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if run == "" {
				return fmt.Errorf("sample: --run is required")
			}
			opt.Stream, opt.Status = cmd.OutOrStdout(), cmd.ErrOrStderr()
			if _, err := generate.Generate(run, opt); err != nil {
				return fmt.Errorf("sample: %w", err)
			}
			io.WriteString(cmd.OutOrStdout(), "\n")
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&run, "run", "", "run directory (newest valid checkpoint) or a checkpoint directory")
	f.StringVar(&opt.Prompt, "prompt", "", "text to continue (default: the start of a new document)")
	f.Float64Var(&opt.Temperature, "temperature", 0.8, "softmax temperature (0 = greedy)")
	f.IntVar(&opt.TopK, "top-k", 200, "keep only the k most likely tokens (0 = all)")
	f.Float64Var(&opt.TopP, "top-p", 1.0, "keep the smallest set of tokens whose probability reaches p")
	f.BoolVar(&opt.EMA, "ema", false, "sample from the EMA weights")
	f.StringVar(&opt.Precision, "precision", "fp32", "the forward's products: fp32, or bf16 (bf16 inputs, float32 sums; needs avx512_bf16)")
	f.IntVar(&opt.Tokens, "tokens", 500, "tokens to generate")
	f.Uint64Var(&opt.Seed, "seed", 1, "sampling seed")
	return cmd
}
