package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kestrel-lm/kestrel/internal/kernels"
	"github.com/kestrel-lm/kestrel/internal/modelbench"
)

func newBenchSampleCmd() *cobra.Command {
	var (
		asJSON                bool
		preset, run           string
		threads, prompt, toks int
		pairs                 int
	)
	cmd := &cobra.Command{
		Use:   "sample [--run runs/NAME | --preset demo|demo-quick|ref7m]",
		Short: "tokens/s of sampling with the KV cache against a full forward per token",
		Long: `Generates --tokens greedy tokens after a random --prompt, in alternating
rounds, with the KV cache (model.Decoder, as kestrel sample does) and without
it (model.Logits over the last seq_len tokens for every token), on a run's
newest checkpoint (--run) or a freshly initialised preset model. Prints
{"op":"sample","tokens_per_sec_cache":…,"tokens_per_sec_no_cache":…,"speedup":…}.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opt := modelbench.SampleOptions{Run: run, Prompt: prompt, Tokens: toks, Pairs: pairs}
			if run == "" {
				cfg, err := modelbench.ModelConfig(preset, "", nil)
				if err != nil {
					return fmt.Errorf("bench sample: %w", err)
				}
				opt.Model = cfg
			}
			if threads > 0 {
				kernels.SetThreads(threads)
			}
			r, err := modelbench.Sample(cmd.Context(), opt)
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), r.Fields(preset))
			}
			fmt.Fprintln(cmd.OutOrStdout(), r.Line(preset))
			return nil
		},
	}
	f := cmd.Flags()
	f.BoolVar(&asJSON, "json", false, "print one JSON object")
	f.StringVar(&run, "run", "", "run directory or checkpoint to load (instead of --preset)")
	f.StringVar(&preset, "preset", "demo", "model preset when no --run: ref7m, demo or demo-quick")
	f.IntVar(&prompt, "prompt", 16, "random prompt tokens")
	f.IntVar(&toks, "tokens", 300, "greedy tokens per round")
	f.IntVar(&pairs, "pairs", 3, "timed rounds (medians are reported)")
	f.IntVar(&threads, "threads", 0, "worker threads (0 = GOMAXPROCS)")
	return cmd
}
