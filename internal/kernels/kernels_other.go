//go:build !amd64

package kernels

func hasAVX512() bool { return false }
func hasAVX2() bool   { return false }

var kernelAVX512, kernelAVX2 *gemmKernel

func fmaPeakLoop() (loop func(n int), flopsPerIter int) { return nil, 0 }
