//go:build !unix

package kernels

// processCPUSeconds is unknown on this system: 0, so CPU-time rates read
// +Inf.
func processCPUSeconds() float64 { return 0 }

// PeakRSSMB is unknown on this system: 0.
func PeakRSSMB() float64 { return 0 }
