package peak

import (
	"time"

	"github.com/kestrel-lm/kestrel/internal/kernels"
)

// maxProbeBF16 is MaxProbe for the bf16 peak (kernels.PeakGFLOPSBF16).
func maxProbeBF16(threads, reps int, each time.Duration) float64 {
	var best float64
	for range max(reps, 1) {
		g, _ := kernels.PeakGFLOPSBF16(threads, each)
		best = max(best, g)
	}
	return best
}

// ResolveFor is Resolve for the products' arithmetic dtype ("fp32" or
// "bf16") of a run on the bf16 GEMM implementation impl
// (kernels.BF16Impl()), with a description of what the peak is for the
// manifest's peak_dtype. fp32 is Resolve. bf16 divides by a configured
// peak as given (train.peak_gflops is then the bf16 peak); else, on a bf16
// kernel, by that kernel's measured peak (cached under BF16Key as kestrel
// bench peak --dtype bf16 writes it, else probed at start-up) — never a
// fixed multiple of the FMA peak: on this project's Xeon one core's
// VDPBF16PS loop ran 0.5× its FMA loop; and on the reference kernel ("ref":
// rounded copies on the float32 GEMM) by the FMA peak it runs on.
func ResolveFor(o Options, dtype, impl string) (Peak, string) {
	if dtype != "bf16" {
		return Resolve(o), "fp32 fma"
	}
	if o.Configured > 0 {
		return Resolve(o), "bf16 (configured)"
	}
	if impl == "ref" || impl == "" {
		return Resolve(o), "bf16 on the reference kernel: the fp32 fma peak it runs on"
	}
	o.BF16 = true
	return Resolve(o), "bf16 " + impl + " (measured bf16 peak)"
}
