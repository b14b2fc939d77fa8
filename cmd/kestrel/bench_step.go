package main

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sort"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/kestrel-lm/kestrel/internal/kernels"
	"github.com/kestrel-lm/kestrel/internal/model"
	"github.com/kestrel-lm/kestrel/internal/optim"
)

// ref7mConfig is the reference model of the step benchmark (issue 3):
// vocab 8192, d_model 256, 4 layers, 4 heads, 4 kv heads, SwiGLU 768,
// seq 256, untied, RMSNorm, RoPE θ 10000 — 7.6M parameters.
func ref7mConfig() model.Config {
	return model.Config{Vocab: 8192, DModel: 256, NLayers: 4, NHeads: 4, NKVHeads: 4, MLPHidden: 768,
		SeqLen: 256, RopeTheta: 10000, NormEps: 1e-5, InitStd: 0.02}
}

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
peak the FMA peak measured by kernels.PeakGFLOPS on the same threads just
before and just after the steps (the larger of the two, so a moment of
contention during one probe does not inflate MFU).
Compare with tools/torchref/bench_step.py run in the same session.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if steps < 1 {
				return fmt.Errorf("bench step: --steps must be >= 1, got %d", steps)
			}
			if batch < 1 {
				return fmt.Errorf("bench step: --batch must be >= 1, got %d", batch)
			}
			if threads > 0 {
				kernels.SetThreads(threads)
			}
			cfg := ref7mConfig()
			m, err := model.New(cfg, 1)
			if err != nil {
				return fmt.Errorf("bench step: %w", err)
			}
			var spans []optim.Span
			for _, t := range m.Tensors() {
				spans = append(spans, optim.Span{Name: t.Name, Offset: t.Offset, Size: t.Size, Kind: t.Kind})
			}
			opt, err := optim.NewAdamW(optim.DefaultConfig(), len(m.Params), spans)
			if err != nil {
				return fmt.Errorf("bench step: optimizer: %w", err)
			}
			peakBefore := kernels.PeakGFLOPS(kernels.Threads(), 300*time.Millisecond)
			T := cfg.SeqLen
			r := rand.New(rand.NewPCG(1, 2))
			b := &model.Batch{B: batch, T: T, Inputs: make([]int32, batch*T), Targets: make([]int32, batch*T)}
			for i := range b.Inputs {
				b.Inputs[i] = int32(r.IntN(cfg.Vocab))
				b.Targets[i] = int32(r.IntN(cfg.Vocab))
			}
			var times []float64
			var first, last float64
			for s := 0; s < warmup+steps; s++ {
				if err := cmd.Context().Err(); err != nil {
					return err
				}
				t0 := time.Now()
				m.ZeroGrads()
				st, err := m.ForwardBackward(b, 1)
				if err != nil {
					return fmt.Errorf("bench step: %w", err)
				}
				if _, err := opt.Step(m.Params, m.Grads, st.Loss, 1e-3); err != nil {
					return fmt.Errorf("bench step: optimizer: %w", err)
				}
				el := time.Since(t0).Seconds()
				if s == 0 {
					first = st.Loss
				}
				last = st.Loss
				if s >= warmup {
					times = append(times, el)
				}
			}
			sort.Float64s(times)
			med := times[len(times)/2]
			tokens := float64(batch * T)
			tps := tokens / med
			peak := max(peakBefore, kernels.PeakGFLOPS(kernels.Threads(), 300*time.Millisecond))
			mfu := tps * m.FLOPsPerToken() / (peak * 1e9)
			var ru syscall.Rusage
			_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
			out := map[string]any{
				"op": "step", "preset": "ref7m", "tokens_per_sec": stepRound(tps), "mfu": stepRound(mfu),
				"step_ms": stepRound(med * 1000), "peak_rss_mb": stepRound(float64(ru.Maxrss) / 1024),
				"threads": kernels.Threads(), "batch": batch, "seq": T, "steps": steps,
				"params": m.NumParams(), "flops_per_token": m.FLOPsPerToken(), "peak_gflops": stepRound(peak),
				"arena_mb": stepRound(float64(m.ArenaBytes()) / (1 << 20)), "gemm": kernels.Impl(),
				"loss_first": stepRound(first), "loss_last": stepRound(last), "gomaxprocs": runtime.GOMAXPROCS(0),
			}
			if asJSON {
				data, _ := json.Marshal(out)
				fmt.Fprintln(cmd.OutOrStdout(), string(data))
				return nil
			}
			fmt.Fprintf(cmd.OutOrStdout(), "ref7m step: %.0f tokens/s, %.1f ms/step, MFU %.1f%% (peak %.0f GFLOP/s, %d threads), peak RSS %.0f MB, arena %.0f MB, loss %.3f → %.3f\n",
				tps, med*1000, 100*mfu, peak, kernels.Threads(), float64(ru.Maxrss)/1024, float64(m.ArenaBytes())/(1<<20), first, last)
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

// stepRound keeps three decimals for JSON output.
func stepRound(x float64) float64 { return math.Round(x*1000) / 1000 }
