package main

import (
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/kestrel-lm/kestrel/internal/train"
)

func newBenchStepCmd() *cobra.Command {
	var (
		asJSON               bool
		preset               string
		steps, batch, warmup int
		threads              []int
		cf                   *configFlags
	)
	cmd := &cobra.Command{
		Use:   "step",
		Short: "tokens/s, MFU, step time and peak RSS of a training step (preset or config)",
		Long: `Trains a model on random tokens: each step is forward + backward + one AdamW
update over the flat buffers. The model is a preset (--preset ref7m, 30m or
124m; see docs/performance.md) or the [model] section of a run config
(--config RUN.toml, micro-batch train.micro_batch, else train.batch_size).
One JSON object per thread count (--threads 1,2):
{"op":"step","preset":…,"tokens_per_sec":…,"mfu":…,"step_ms":…,"peak_rss_mb":…,"threads":…,"scaling_efficiency":…}
scaling_efficiency (with a 1-thread run first) is tokens/s ÷ (threads ·
1-thread tokens/s). peak_rss_mb is VmHWM of this run alone (reset before).

MFU = tokens/s · FLOPs/token ÷ peak, FLOPs/token = 6·N(matmul params,
lm_head included) + 12·n_layers·seq_len·d_attn (model.FLOPsPerToken), the
peak this machine's cached FMA peak on the same threads (kestrel bench peak;
peak_source says "cached" or "probed"), or train.peak_gflops of --config.
Compare with tools/torchref/bench_step.py run in the same session.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, err := train.LookupStepPreset(preset)
			if err != nil {
				return err
			}
			opt := train.StepBenchOptions{Model: p.Model, Batch: p.Batch, Steps: steps, Warmup: warmup}
			if cf.path != "" {
				cfg, err := cf.load()
				if err != nil {
					return err
				}
				p.Name, opt = "config:"+filepath.Base(cf.path), train.StepBenchFromRun(cfg.Model, cfg.Train, steps, warmup)
			}
			if batch > 0 {
				opt.Batch = batch
			}
			rs, err := train.BenchStepThreads(cmd.Context(), opt, threads)
			for _, r := range rs {
				if asJSON {
					if e := printJSON(cmd.OutOrStdout(), r.FieldsScaled(p.Name, rs[0])); e != nil {
						return e
					}
					continue
				}
				fmt.Fprintln(cmd.OutOrStdout(), r.Line(p.Name))
			}
			return err
		},
	}
	cf = addConfigFlags(cmd, "a run config whose [model] and micro-batch to benchmark (instead of --preset)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object per thread count")
	cmd.Flags().StringVar(&preset, "preset", "ref7m", "model preset: ref7m, 30m or 124m")
	cmd.Flags().IntVar(&steps, "steps", 5, "timed steps (the median is reported)")
	cmd.Flags().IntVar(&warmup, "warmup", 1, "untimed steps first (arena allocation, page faults)")
	cmd.Flags().IntSliceVar(&threads, "threads", nil, "worker thread counts, e.g. 1,2 (empty = GOMAXPROCS)")
	cmd.Flags().IntVar(&batch, "batch", 0, "sequences per step (0 = the preset's or the config's)")
	return cmd
}
