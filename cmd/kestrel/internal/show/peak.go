package show

import (
	"fmt"
	"io"
	"math"
	"time"

	"github.com/kestrel-lm/kestrel/internal/kernels"
	"github.com/kestrel-lm/kestrel/internal/peak"
)

// PeakFields are the result as `kestrel bench peak --json` prints it.
func PeakFields(r *peak.BenchResult) map[string]any {
	out := map[string]any{"op": "peak", "gflops": round1(r.GFLOPS), "median": round1(r.Median), "min": round1(r.Min),
		"probes": len(r.Probes), "probe_ms": r.Each.Milliseconds(), "threads": r.Threads, "key": r.Key.String(),
		"impl": r.Key.Impl, "cache": r.CachePath, "stored": r.Stored, "cached_gflops": round1(r.Cached.GFLOPS),
		"cached_at": r.Cached.MeasuredAt.Format(time.RFC3339)}
	if r.CacheWarning != "" {
		out["cache_warning"] = r.CacheWarning
	}
	return out
}

// Peak prints the result for a person: the peak, how it was measured, the
// machine key and what happened to the cache.
func Peak(w io.Writer, r *peak.BenchResult) {
	if r.CacheWarning != "" {
		fmt.Fprintf(w, "warning: %s (replaced)\n", r.CacheWarning)
	}
	what := "FMA peak"
	if r.DType == "bf16" {
		what = "bf16 (" + kernels.BF16PeakInstruction() + ") peak"
	}
	fmt.Fprintf(w, "%s: %.1f GFLOP/s (max of %d probes of %v on %d threads; median %.1f, min %.1f)\n",
		what, r.GFLOPS, len(r.Probes), r.Each, r.Threads, r.Median, r.Min)
	fmt.Fprintf(w, "key:   %s\ncache: %s\n", r.Key, r.CachePath)
	switch {
	case r.Stored && r.Previous != nil:
		fmt.Fprintf(w, "stored (was %.1f GFLOP/s, measured %s)\n", r.Previous.GFLOPS, r.Previous.MeasuredAt.Format(time.DateOnly))
	case r.Stored:
		fmt.Fprintln(w, "stored")
	default:
		fmt.Fprintf(w, "kept the cached %.1f GFLOP/s (measured %s): the cache only rises; --replace stores this measurement\n",
			r.Cached.GFLOPS, r.Cached.MeasuredAt.Format(time.DateOnly))
	}
}

func round1(x float64) float64 { return math.Round(x*10) / 10 }
