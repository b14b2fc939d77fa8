package kernels

import "golang.org/x/sys/cpu"

func hasAVX512() bool {
	return cpu.X86.HasAVX512F && cpu.X86.HasAVX512VL && cpu.X86.HasAVX2 && cpu.X86.HasFMA && cpu.X86.HasOSXSAVE
}

func hasAVX2() bool { return cpu.X86.HasAVX2 && cpu.X86.HasFMA && cpu.X86.HasOSXSAVE }

var kernelAVX512 = &gemmKernel{name: "avx512", mr: 14, nr: 32, kc: 256, mc: 224, nc: 4096, fn: kernelRef(14, 32)}

var kernelAVX2 = &gemmKernel{name: "avx2", mr: 6, nr: 16, kc: 256, mc: 144, nc: 4096, fn: kernelRef(6, 16)}
