package main

import (
	"github.com/spf13/cobra"

	"github.com/kestrel-lm/kestrel/cmd/kestrel/internal/show"
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
		Long:  helpText("bench-sample"),
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opt := modelbench.SampleOptions{Run: run, Preset: preset, Prompt: prompt, Tokens: toks, Pairs: pairs}
			if threads > 0 {
				kernels.SetThreads(threads)
			}
			r, err := modelbench.Sample(cmd.Context(), opt)
			if err != nil {
				return err
			}
			return show.Emit(cmd.OutOrStdout(), asJSON, show.SampleBenchFields(r, preset), show.SampleBenchLine(r, preset))
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
