package kernels

import (
	"fmt"
	"log/slog"
	"os"
	"strings"
)

// The bf16 GEMM implementation SgemmBF16 runs, chosen at start-up like the
// float32 one: the best the CPU supports ("amx": AMX-BF16 tiles, where
// the CPU has them and the OS granted the tile state; "avx512bf16":
// VDPBF16PS), else "ref" (bf16-rounded copies on the float32 kernels: the
// right result at float32 speed). KESTREL_GEMM_BF16=amx|avx512bf16|ref
// selects one; a name the
// CPU cannot run falls back to the best, with a warning.
var (
	kernBF16 *gemmKernel // nil: the reference
	bf16Impl string
)

// bf16RefName names the reference implementation.
const bf16RefName = "ref"

func init() {
	useBF16Kernel(selectBF16Kernel(strings.ToLower(strings.TrimSpace(os.Getenv("KESTREL_GEMM_BF16")))))
}

func useBF16Kernel(k *gemmKernel) {
	kernBF16 = k
	bf16Impl = bf16RefName
	if k != nil {
		bf16Impl = k.name
	}
}

// selectBF16Kernel returns the bf16 kernel named want (nil for "ref"), or
// the best available when want is empty or cannot run here (logged).
func selectBF16Kernel(want string) *gemmKernel {
	ks := bf16KernelsAvailable()
	var best *gemmKernel
	if len(ks) > 0 {
		best = ks[0]
	}
	switch want {
	case "":
		return best
	case bf16RefName:
		return nil
	}
	for _, k := range ks {
		if k.name == want {
			return k
		}
	}
	slog.Warn("KESTREL_GEMM_BF16 names an implementation this CPU or build cannot run; using the best available",
		"requested", want, "using", implName(best))
	return best
}

func implName(k *gemmKernel) string {
	if k == nil {
		return bf16RefName
	}
	return k.name
}

// BF16Impl names the bf16 GEMM implementation SgemmBF16 runs: "amx"
// (AMX-BF16 tiles), "avx512bf16" (VDPBF16PS micro-kernel) or "ref" (rounded copies on the
// float32 kernels), for the run manifest.
func BF16Impl() string { return bf16Impl }

// BF16ImplsAvailable names the bf16 GEMM implementations this CPU and
// build can run, best first ("ref" always last).
func BF16ImplsAvailable() []string {
	var names []string
	for _, k := range bf16KernelsAvailable() {
		names = append(names, k.name)
	}
	return append(names, bf16RefName)
}

// UseBF16Impl selects the bf16 GEMM implementation by name and returns
// the one it replaces, so that tests and benchmarks can cover each. A name
// this CPU or build cannot run is an error and changes nothing. Call it
// only while no GEMM runs.
func UseBF16Impl(name string) (prev string, err error) {
	if name == bf16RefName {
		prev = bf16Impl
		useBF16Kernel(nil)
		return prev, nil
	}
	for _, k := range bf16KernelsAvailable() {
		if k.name == name {
			prev = bf16Impl
			useBF16Kernel(k)
			return prev, nil
		}
	}
	return bf16Impl, fmt.Errorf("kernels: bf16 GEMM implementation %q is not available here (have %v)", name, BF16ImplsAvailable())
}

// BF16PeakInstruction names the instruction whose throughput the bf16
// peak probe measures for the selected implementation: "TDPBF16PS" for
// amx, else "VDPBF16PS".
func BF16PeakInstruction() string {
	if bf16Impl == "amx" {
		return "TDPBF16PS"
	}
	return "VDPBF16PS"
}
