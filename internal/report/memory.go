package report

import (
	"fmt"
	"strings"

	"github.com/kestrel-lm/kestrel/internal/runlog"
)

// writeMemory is the report's Memory section: the peak rss_bytes and
// go_heap_bytes the steps measured beside the preflight's estimate
// (manifest.json memory_estimate_bytes), and the step-time tails. A run
// that measured none of them (no /proc, an older kestrel) gets no section.
func writeMemory(b *strings.Builder, log *runlog.Log, runDir string) {
	peak, at := seriesMax(log, "rss_bytes")
	heap, _ := seriesMax(log, "go_heap_bytes")
	if !(peak > 0) && !(heap > 0) {
		return
	}
	b.WriteString("## Memory and step time\n\n| | |\n|---|---|\n")
	if peak > 0 {
		fmt.Fprintf(b, "| peak RSS (rss_bytes) | %s at step %.0f |\n", mib(peak), at)
	}
	if heap > 0 {
		fmt.Fprintf(b, "| peak Go heap (go_heap_bytes) | %s |\n", mib(heap))
	}
	if man, err := runlog.ReadManifest(runDir); err == nil && man.MemoryEstimate > 0 {
		est := float64(man.MemoryEstimate)
		fmt.Fprintf(b, "| preflight estimate (memory_estimate_bytes) | %s |\n", mib(est))
		if peak > 0 {
			fmt.Fprintf(b, "| measured peak ÷ estimate | %.2f |\n", peak/est)
		}
	}
	if p50, _, ok := log.Last("step_time_p50"); ok {
		p95, _, _ := log.Last("step_time_p95")
		fmt.Fprintf(b, "| step time p50 / p95 (last 100 steps) | %.3g s / %.3g s |\n", p50, p95)
	}
	b.WriteString("\n")
}

// seriesMax is the largest value of name over the steps and its step
// (0, 0 when the run has none).
func seriesMax(log *runlog.Log, name string) (hi, step float64) {
	xs, ys, err := log.Series(name, "step")
	if err != nil {
		return 0, 0
	}
	for i, v := range ys {
		if v > hi {
			hi, step = v, xs[i]
		}
	}
	return hi, step
}

func mib(x float64) string { return fmt.Sprintf("%.0f MiB", x/(1<<20)) }
