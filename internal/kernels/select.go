package kernels

import (
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
