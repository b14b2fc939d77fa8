// Package kernels holds kestrel's float32 hot loops: SGEMM in the layouts
// training needs (with Go-assembly micro-kernels behind a pure-Go fallback,
// chosen at start-up from CPU features) and the persistent worker pool that
// splits work across cores.
package kernels

import (
	"strings"

	"golang.org/x/sys/cpu"
)

// Features lists the CPU features the kernels can use on this machine.
func Features() []string {
	var f []string
	if cpu.X86.HasAVX512F {
		f = append(f, "avx512f")
	}
	if cpu.X86.HasAVX2 {
		f = append(f, "avx2")
	}
	if cpu.X86.HasFMA {
		f = append(f, "fma")
	}
	return f
}

// Impl names the GEMM implementation selected at start-up.
func Impl() string { return gemmImpl }

// FeatureString is Features joined by commas, or "none".
func FeatureString() string {
	if f := Features(); len(f) > 0 {
		return strings.Join(f, ",")
	}
	return "none"
}
