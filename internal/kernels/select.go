package kernels

import (
	"fmt"
	"log/slog"
	"os"
	"strings"
)

// envImpl is the implementation requested with KESTREL_GEMM (go, avx2 or
// avx512); empty means the best one the CPU supports.
func envImpl() string { return strings.ToLower(strings.TrimSpace(os.Getenv("KESTREL_GEMM"))) }

// kernelsAvailable lists the micro-kernels this CPU can run, best first.
func kernelsAvailable() []*gemmKernel {
	var ks []*gemmKernel
	if hasAVX512() {
		ks = append(ks, kernelAVX512)
	}
	if hasAVX2() {
		ks = append(ks, kernelAVX2)
	}
	return append(ks, kernelGo)
}

// selectKernel returns the kernel named want, or the best available one when
// want is empty or not supported here (which is logged).
func selectKernel(want string) *gemmKernel {
	ks := kernelsAvailable()
	if want == "" {
		return ks[0]
	}
	for _, k := range ks {
		if k.name == want {
			return k
		}
	}
	slog.Warn("KESTREL_GEMM names an implementation this CPU or build cannot run; using the best available",
		"requested", want, "using", ks[0].name)
	return ks[0]
}

// GemmKC is the depth (kc) of the k slices of the active implementation:
// Sgemm sums the k dimension kc at a time, the first slice with the
// caller's beta and every later one with beta = 1. A product split along k
// into parts whose lengths (all but the last) are multiples of kc, the
// first part with the caller's beta and the others with beta = 1, therefore
// sums the same products in the same order: its result is bit-identical.
func GemmKC() int { return kern.kc }

// GemmMR is the rows of C one micro-kernel call computes (the tile height)
// in the active implementation. A product whose m is a multiple of it has
// no ragged bottom tile, which the kernels compute at a fraction of their
// speed.
func GemmMR() int { return kern.mr }

// UseImpl selects the GEMM implementation name ("go", "avx2" or "avx512")
// and returns the one it replaces, so that tests and benchmarks outside
// this package can cover every kernel. A name this CPU or build cannot run
// is an error and changes nothing. Call it only while no GEMM runs.
func UseImpl(name string) (prev string, err error) {
	for _, k := range kernelsAvailable() {
		if k.name == name {
			prev = gemmImpl
			useKernel(k)
			return prev, nil
		}
	}
	return gemmImpl, fmt.Errorf("kernels: GEMM implementation %q is not available here (have %v)", name, ImplsAvailable())
}

// ImplsAvailable names the GEMM implementations this CPU and build can
// run, best first (the pure-Go one is always last).
func ImplsAvailable() []string {
	var names []string
	for _, k := range kernelsAvailable() {
		names = append(names, k.name)
	}
	return names
}
