package show

import (
	"fmt"
	"runtime"

	"github.com/kestrel-lm/kestrel/internal/kernels"
	"github.com/kestrel-lm/kestrel/internal/model"
	"github.com/kestrel-lm/kestrel/internal/modelbench"
)

// EvalBenchFields are r as `kestrel bench eval --json` prints it for the
// named preset.
func EvalBenchFields(r modelbench.EvalResult, preset string) map[string]any {
	f := modelFields(r.Model)
	for k, v := range map[string]any{
		"op": "eval", "preset": preset, "batch": r.Batch, "pairs": r.Pairs,
		"forward_only_tokens_per_sec": round3(r.ForwardOnlyTPS), "forward_tokens_per_sec": round3(r.ForwardTPS),
		"train_tokens_per_sec": round3(r.TrainTPS), "ratio_vs_train": round3(r.Ratio), "ratio_vs_forward": round3(r.RatioForward),
		"max_abs_diff": r.MaxAbsDiff, "loss_rel_diff_vs_forward": r.LossRelDiff, "peak_rss_mb": round3(r.PeakRSSMB),
	} {
		f[k] = v
	}
	return f
}

// EvalBenchLine is r as one line of text.
func EvalBenchLine(r modelbench.EvalResult, preset string) string {
	return fmt.Sprintf("%s eval: forward-only %.0f tokens/s, Forward %.0f, training step %.0f; forward-only ÷ training %.2f×, ÷ Forward %.2f× (median of %d alternating rounds, batch %d×%d, %d threads); max |Δ log p| %.2g",
		preset, r.ForwardOnlyTPS, r.ForwardTPS, r.TrainTPS, r.Ratio, r.RatioForward, r.Pairs, r.Batch, r.Seq, kernels.Threads(), r.MaxAbsDiff)
}

// SampleBenchFields are r as `kestrel bench sample --json` prints it for
// the named preset.
func SampleBenchFields(r modelbench.SampleResult, preset string) map[string]any {
	f := modelFields(r.Model)
	for k, v := range map[string]any{
		"op": "sample", "preset": preset, "source": r.Source, "prompt": r.Prompt, "tokens": r.Tokens, "pairs": r.Pairs,
		"tokens_per_sec_cache": round3(r.CacheTPS), "tokens_per_sec_no_cache": round3(r.NoCacheTPS), "speedup": round3(r.Speedup),
		"peak_rss_mb": round3(kernels.PeakRSSMB()),
	} {
		f[k] = v
	}
	return f
}

// SampleBenchLine is r as one line of text.
func SampleBenchLine(r modelbench.SampleResult, preset string) string {
	return fmt.Sprintf("%s sample (%s): KV cache %.0f tokens/s, full forward per token %.0f tokens/s, speedup %.2f× (%d-token prompt, %d greedy tokens, median of %d alternating rounds, %d threads)",
		preset, r.Source, r.CacheTPS, r.NoCacheTPS, r.Speedup, r.Prompt, r.Tokens, r.Pairs, kernels.Threads())
}

// modelFields are the fields every model benchmark prints: the model
// measured and the machine's threads.
func modelFields(m *model.Model) map[string]any {
	c := m.Cfg
	return map[string]any{
		"params": m.NumParams(), "vocab": c.Vocab, "d_model": c.DModel, "n_layers": c.NLayers,
		"seq": c.SeqLen, "threads": kernels.Threads(), "gomaxprocs": runtime.GOMAXPROCS(0), "gemm": kernels.Impl(),
	}
}
