package kernels

import (
	"bytes"
	"os"
	"strconv"
)

// vmHWMMB reads VmHWM (the peak resident set, which ResetPeakRSS can
// lower) from /proc/self/status, in MiB.
func vmHWMMB() (float64, bool) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, false
	}
	for _, line := range bytes.Split(b, []byte("\n")) {
		rest, ok := bytes.CutPrefix(line, []byte("VmHWM:"))
		if !ok {
			continue
		}
		f := bytes.Fields(rest) // "1234", "kB"
		if len(f) < 1 {
			return 0, false
		}
		kb, err := strconv.ParseFloat(string(f[0]), 64)
		if err != nil {
			return 0, false
		}
		return kb / 1024, true
	}
	return 0, false
}

// ResetPeakRSS sets the peak resident set the kernel tracks for this process
// (VmHWM) back to the current resident set, by writing 5 to
// /proc/self/clear_refs (Linux ≥ 4.0), so that PeakRSSMB then measures the
// peak of what follows alone. It reports whether the reset took effect.
func ResetPeakRSS() bool {
	return os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
}
