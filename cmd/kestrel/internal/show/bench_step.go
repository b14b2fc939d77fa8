package show

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"runtime"
	"strings"

	"github.com/kestrel-lm/kestrel/internal/kernels"
	"github.com/kestrel-lm/kestrel/internal/stepbench"
)

// StepBench writes results as kestrel bench step prints them for the named
// preset: with asJSON one JSON object per line for each result (with
// scaling_efficiency against the first) followed by one per op (OpFields)
// when it holds Ops; else its StepLine followed by its StepOps table.
func StepBench(w io.Writer, results []stepbench.StepBench, preset string, asJSON bool) error {
	enc := json.NewEncoder(w)
	for _, r := range results {
		if !asJSON {
			text := StepLine(r, preset)
			if r.Ops != nil {
				text += "\n" + StepOps(r)
			}
			if _, err := fmt.Fprintln(w, text); err != nil {
				return err
			}
			continue
		}
		if err := enc.Encode(StepFieldsScaled(r, preset, results[0])); err != nil {
			return err
		}
		for _, o := range r.Ops {
			f := OpFields(o, preset, r.Threads)
			if r.Parallel > 1 {
				f["pass_ms"], f["parallel"] = round3(o.PassMS), r.Parallel
			}
			if err := enc.Encode(f); err != nil {
				return err
			}
		}
	}
	return nil
}

// StepFields are r as `kestrel bench step --json` prints it.
func StepFields(r stepbench.StepBench, preset string) map[string]any {
	f := map[string]any{
		"op": "step", "preset": preset, "tokens_per_sec": round3(r.TokensPerSec), "mfu": round3(r.MFU),
		"step_ms": round3(r.StepSec * 1000), "peak_rss_mb": round3(r.PeakRSSMB),
		"threads": r.Threads, "batch": r.Batch, "parallel": max(1, r.Parallel), "seq": r.Seq, "steps": r.Steps,
		"params": r.Params, "flops_per_token": r.FLOPsPerToken, "peak_gflops": round3(r.PeakGFLOPS), "peak_source": r.PeakSource,
		"peak_probe_gflops": round3(r.PeakProbeGFLOPS),
		"arena_mb":          round3(float64(r.ArenaBytes) / (1 << 20)), "gemm": kernels.Impl(),
		"loss_first": round3(r.LossFirst), "loss_last": round3(r.LossLast), "gomaxprocs": runtime.GOMAXPROCS(0),
		"precision": r.Precision, "peak_dtype": r.PeakDtype,
	}
	if r.Ops != nil {
		bd := r.Bounds()
		f["mfu_mean"], f["mfu_bound_flop_ops_optimizer"] = round3(bd.Mean), round3(bd.FLOPOpsOptimizer)
		f["mfu_bound_flop_ops"], f["mfu_bound_kernels"] = round3(bd.FLOPOps), round3(bd.Kernels)
	}
	return f
}

// StepFieldsScaled are StepFields plus scaling_efficiency against base
// (see stepbench.StepBench.ScalingEfficiency) when r runs on more threads
// than a 1-thread base.
func StepFieldsScaled(r stepbench.StepBench, preset string, base stepbench.StepBench) map[string]any {
	f := StepFields(r, preset)
	if eff := r.ScalingEfficiency(base); r.Threads > 1 && eff > 0 {
		f["scaling_efficiency"] = math.Round(eff*1000) / 1000
	}
	return f
}

// StepLine is r as one line of text.
func StepLine(r stepbench.StepBench, preset string) string {
	par := ""
	if r.Parallel > 1 {
		par = fmt.Sprintf(" (%d micro-batches of %d side by side)", r.Parallel, r.Batch)
	}
	return fmt.Sprintf("%s step%s: %.0f tokens/s, %.1f ms/step, MFU %.1f%% (peak %.0f GFLOP/s, %d threads), peak RSS %.0f MB, arena %.0f MB, loss %.3f → %.3f",
		preset, par, r.TokensPerSec, r.StepSec*1000, 100*r.MFU, r.PeakGFLOPS, r.Threads, r.PeakRSSMB, float64(r.ArenaBytes)/(1<<20), r.LossFirst, r.LossLast)
}

// OpFields are one op of a step as `kestrel bench step --ops --json`
// prints it.
func OpFields(o stepbench.OpTime, preset string, threads int) map[string]any {
	return map[string]any{
		"op": "step_op", "preset": preset, "threads": threads, "name": o.Name,
		"ms": round3(o.MS), "share": round3(o.Share), "gflop": round3(o.GFLOP),
		"gflops": round3(o.GFLOPS), "pct_peak": round3(o.PctPeak),
		"gemm_pack": round3(o.GemmPack), "gemm_kernel": round3(o.GemmKernel), "gemm_other": round3(o.GemmOther),
		"kernel_pct_peak": round3(o.KernelPctPeak),
	}
}

// StepOps is r.Ops as text: one line per op; the ops MFU credits FLOPs
// to with their rate and fraction of the peak, and those with GEMMs with
// how their GEMMs' thread time splits (pack, kernel, other) and the
// micro-kernel's own fraction of the peak; then a line with r.Bounds().
// With passes side by side (r.Parallel > 1) a column ms/pass comes after
// ms/step, and GFLOP, GFLOP/s and of peak are one pass's on one thread.
func StepOps(r stepbench.StepBench) string {
	var b strings.Builder
	par := r.Parallel > 1
	head, passHead := "op ("+fmt.Sprint(r.Threads)+" threads)", ""
	if par { // the title on a line of its own; a column ms/pass
		fmt.Fprintf(&b, "  op (%d threads, %d passes; rates per pass on 1 thread)\n", r.Threads, r.Parallel)
		head, passHead = "", fmt.Sprintf(" %8s", "ms/pass")
	}
	fmt.Fprintf(&b, "  %-24s %9s%s %7s %8s %9s %8s %6s %6s %6s %11s\n", head, "ms/step", passHead, "share",
		"GFLOP", "GFLOP/s", "of peak", "pack", "kernel", "other", "kernel/peak")
	pct := func(x float64) string { return fmt.Sprintf("%.1f%%", 100*x) }
	for _, o := range r.Ops {
		pass := ""
		if par {
			ms := ""
			if o.PassMS > 0 {
				ms = fmt.Sprintf("%.2f", o.PassMS)
			}
			pass = fmt.Sprintf(" %8s", ms)
		}
		line := fmt.Sprintf("  %-24s %9.2f%s %7s", o.Name, o.MS, pass, pct(o.Share))
		if o.GFLOP > 0 {
			line += fmt.Sprintf(" %8.2f %9.1f %8s", o.GFLOP, o.GFLOPS, pct(o.PctPeak))
		}
		if o.GemmKernel > 0 {
			line += fmt.Sprintf(" %6s %6s %6s", pct(o.GemmPack), pct(o.GemmKernel), pct(o.GemmOther))
			if o.KernelPctPeak > 0 {
				line += fmt.Sprintf(" %11s", pct(o.KernelPctPeak))
			}
		}
		b.WriteString(line + "\n")
	}
	bd := r.Bounds()
	fmt.Fprintf(&b, "  MFU %s of the mean step; if only the FLOP ops and the optimizer took time %s, only the FLOP ops %s, only their micro-kernels %s",
		pct(bd.Mean), pct(bd.FLOPOpsOptimizer), pct(bd.FLOPOps), pct(bd.Kernels))
	return b.String()
}

// round3 rounds x to three decimals for the benchmarks' JSON.
func round3(x float64) float64 { return math.Round(x*1000) / 1000 }
