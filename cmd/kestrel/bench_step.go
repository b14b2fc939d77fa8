package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kestrel-lm/kestrel/internal/kernels"
	"github.com/kestrel-lm/kestrel/internal/train"
)

func newBenchStepCmd() *cobra.Command {
	var (
		asJSON  bool
		steps   int
		threads int
		batch   int
		warmup  int
	)
	cmd := &cobra.Command{
		Use:   "step",
		Short: "tokens/s, MFU and step time of the ref7m training step",
		Long: `Trains the reference model ref7m (vocab 8192, d_model 256, 4 layers, 4 heads,
SwiGLU 768, seq 256, batch 8, untied, RoPE) on random tokens: each step is
forward + backward + one AdamW update over the flat buffers. Prints
{"op":"step","preset":"ref7m","tokens_per_sec":…,"mfu":…,"step_ms":…,"peak_rss_mb":…}.

MFU = tokens/s · FLOPs/token ÷ peak, with FLOPs/token = 6·N(matmul params,
lm_head included) + 12·n_layers·seq_len·d_attn (model.FLOPsPerToken) and the
peak this machine's cached FMA peak on the same threads, as kestrel train
uses it (see kestrel bench peak; probed and cached when nothing is cached
yet), so contention at start-up does not inflate MFU; peak_source says
which ("cached" or "probed").
Compare with tools/torchref/bench_step.py run in the same session.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if threads > 0 {
				kernels.SetThreads(threads)
			}
			r, err := train.BenchStep(cmd.Context(), train.StepBenchOptions{Model: train.Ref7mConfig(), Batch: batch, Steps: steps, Warmup: warmup})
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), r.Fields("ref7m"))
			}
			fmt.Fprintln(cmd.OutOrStdout(), r.Line("ref7m"))
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object")
	cmd.Flags().IntVar(&steps, "steps", 5, "timed steps (the median is reported)")
	cmd.Flags().IntVar(&warmup, "warmup", 1, "untimed steps first (arena allocation, page faults)")
	cmd.Flags().IntVar(&threads, "threads", 0, "worker threads (0 = GOMAXPROCS)")
	cmd.Flags().IntVar(&batch, "batch", 8, "sequences per step (ref7m uses 8)")
	return cmd
}
