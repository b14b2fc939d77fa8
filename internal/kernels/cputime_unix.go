//go:build unix

package kernels

import "syscall"

// processCPUSeconds is the user+system CPU time of this process so far.
func processCPUSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Sec+ru.Stime.Sec) + float64(ru.Utime.Usec+ru.Stime.Usec)*1e-6
}

// PeakRSSMB is the peak resident set size of this process in MiB: VmHWM of
// /proc/self/status on Linux (which ResetPeakRSS lowers), else the
// kernel's ru_maxrss (KiB on Linux), or 0 where it is not known.
func PeakRSSMB() float64 {
	if mb, ok := vmHWMMB(); ok {
		return mb
	}
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Maxrss) / 1024
}
