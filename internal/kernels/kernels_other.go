//go:build !amd64

package kernels

func hasAVX512() bool { return false }
func hasAVX2() bool   { return false }

var kernelAVX512, kernelAVX2 *gemmKernel

func fmaPeakLoop() (loop func(n int), flopsPerIter int) { return nil, 0 }

// specA14 is kernels_amd64.go's switch for the 14×32 kernels specialised
// in A's layout; there are none here, so it changes nothing (the tile-order
// test flips it on every platform).
var specA14 = true
