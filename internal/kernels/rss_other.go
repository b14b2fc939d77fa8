//go:build !linux

package kernels

// vmHWMMB is not available here; PeakRSSMB falls back to getrusage.
func vmHWMMB() (float64, bool) { return 0, false }

// ResetPeakRSS cannot reset the peak resident set on this system: false.
func ResetPeakRSS() bool { return false }
