package peak

// BF16PerFMA is how many more multiply-adds a core does per cycle in bf16
// than in float32 FMA: VDPBF16PS takes 32 bf16 pairs into 16 float32 sums
// (2 products per lane and instruction, on the FMA ports) where VFMADD231PS
// does 16. Until the kernels carry a bf16 peak probe, the bf16 peak is this
// times the measured FMA peak.
const BF16PerFMA = 2

// ResolveFor is Resolve for the products' arithmetic dtype ("fp32" or
// "bf16"), with a description of what the peak is for the manifest's
// peak_dtype. fp32 is Resolve. bf16 divides by a configured peak as given
// (train.peak_gflops is then the bf16 peak), else by BF16PerFMA × the FMA
// peak Resolve finds (the probe reading scaled with it, so ProbeRatio keeps
// its meaning).
func ResolveFor(o Options, dtype string) (Peak, string) {
	p := Resolve(o)
	if dtype != "bf16" {
		return p, "fp32 fma"
	}
	if p.Source == Configured {
		return p, "bf16 (configured)"
	}
	p.GFLOPS *= BF16PerFMA
	p.Probe *= BF16PerFMA
	return p, "bf16 = 2 × fp32 fma peak (VDPBF16PS: 2 products per lane)"
}
