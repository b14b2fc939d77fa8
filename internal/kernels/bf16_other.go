//go:build !amd64

package kernels

func bf16KernelsAvailable() []*gemmKernel                { return nil }
func bf16PeakLoop() (loop func(n int), flopsPerIter int) { return nil, 0 }
