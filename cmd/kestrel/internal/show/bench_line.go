package show

import (
	"fmt"

	"github.com/kestrel-lm/kestrel/internal/data/loader"
	"github.com/kestrel-lm/kestrel/internal/kernels"
	"github.com/kestrel-lm/kestrel/internal/tokbench"
)

// GEMMFields are the measurement as `kestrel bench gemm --json` prints it.
func GEMMFields(b kernels.GEMMBench) map[string]any {
	return map[string]any{"op": "gemm", "layout": b.Layout, "m": b.M, "k": b.K, "n": b.N, "threads": b.Threads,
		"gflops": round1(b.GFLOPS), "pct_peak": round1(100 * b.GFLOPS / b.Peak),
		"gflops_cpu": round1(b.GFLOPSCPU), "pct_peak_cpu": round1(100 * b.GFLOPSCPU / b.PeakCPU), "impl": b.Impl, "dtype": b.DType}
}

// GEMMPeakFields are the peak probes of one thread count as `kestrel bench
// gemm --json` prints them.
func GEMMPeakFields(p kernels.PeakBench) map[string]any {
	impl := kernels.Impl()
	if p.DType == "bf16" {
		impl = kernels.BF16Impl()
	}
	return map[string]any{"op": "peak", "threads": p.Threads, "gflops": round1(p.GFLOPS), "gflops_cpu": round1(p.GFLOPSCPU), "impl": impl, "dtype": p.DType}
}

// GEMMHeader is the head of `kestrel bench gemm`'s text table.
func GEMMHeader() string {
	return fmt.Sprintf("SGEMM, implementation %s; bf16 GEMM, implementation %s (CPU features %s)\n", kernels.Impl(), kernels.BF16Impl(), kernels.FeatureString()) +
		fmt.Sprintf("%-6s %-5s %5s %5s %5s %7s %9s %9s %7s | %9s %9s %7s\n", "layout", "dtype", "m", "k", "n", "threads",
			"GFLOP/s", "peak", "%peak", "cpu-rate", "cpu-peak", "%peak")
}

// GEMMLine is the measurement as a row of the text table.
func GEMMLine(b kernels.GEMMBench) string {
	return fmt.Sprintf("%-6s %-5s %5d %5d %5d %7d %9.1f %9.1f %6.1f%% | %9.1f %9.1f %6.1f%%",
		b.Layout, b.DType, b.M, b.K, b.N, b.Threads, b.GFLOPS, b.Peak, 100*b.GFLOPS/b.Peak, b.GFLOPSCPU, b.PeakCPU, 100*b.GFLOPSCPU/b.PeakCPU)
}

// GEMMPeakLine is the peak probes of one thread count as a line of text.
func GEMMPeakLine(p kernels.PeakBench) string {
	what := "FMA peak"
	if p.DType == "bf16" {
		what = "bf16 (" + kernels.BF16PeakInstruction() + ") peak"
	}
	return fmt.Sprintf("%s, %d thread(s): %.1f GFLOP/s wall (median of %d probes, min %.1f, max %.1f), %.1f by CPU time",
		what, p.Threads, p.GFLOPS, p.Probes, p.Min, p.Max, p.GFLOPSCPU)
}

// LoaderFields are the result as `kestrel bench loader --json` prints it,
// with the dataset's name.
func LoaderFields(r loader.BenchResult, dataset string) map[string]any {
	var m map[string]any
	switch r.Op {
	case loader.BenchFill:
		m = map[string]any{"op": r.Op, "permutation": r.Permutation, "packing": r.Packing, "batch": r.Batch, "seq_len": r.SeqLen,
			"batches_per_sec": r.BatchesPerSec, "tokens_per_sec": r.TokensPerSec, "ratio_to_copy": r.RatioToCopy}
	case loader.BenchPermIndex:
		m = map[string]any{"op": r.Op, "permutation": r.Permutation, "ns_per_index": r.NsPerIndex, "checksum": r.Checksum}
	default:
		m = map[string]any{"op": r.Op, "batches_per_sec": r.BatchesPerSec, "tokens_per_sec": r.TokensPerSec}
	}
	m["dataset"] = dataset
	return m
}

// LoaderLine is the result as one line of text: the operation, then its
// measured fields.
func LoaderLine(r loader.BenchResult) string {
	m := LoaderFields(r, "")
	s := fmt.Sprint(m["op"])
	for _, k := range []string{"permutation", "batches_per_sec", "tokens_per_sec", "ratio_to_copy", "ns_per_index"} {
		if v, ok := m[k]; ok {
			if f, ok := v.(float64); ok {
				s += fmt.Sprintf("  %s=%.4g", k, f)
			} else {
				s += fmt.Sprintf("  %s=%v", k, v)
			}
		}
	}
	return s
}

// TokbenchLine is the result as one line of text.
func TokbenchLine(r tokbench.Result) string {
	s := fmt.Sprintf("%-12s threads=%d  %8.2f MB/s  (%.1f MB, %d tokens)", r.Impl, r.Threads, r.MBPerS, r.MB, r.Tokens)
	if r.Encoding != "" && r.Encoding != "r50k_base" {
		s = r.Encoding + "  " + s
	}
	if r.Ratio > 0 {
		s += fmt.Sprintf("  %.2f× tiktoken-go", r.Ratio)
	}
	if r.DocsDiffering > 0 {
		s += fmt.Sprintf("  (%d documents differ from tiktoken-go: its regexp2 cuts newline runs short)", r.DocsDiffering)
	}
	return s
}
