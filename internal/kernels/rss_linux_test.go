package kernels

import (
	"runtime"
	"runtime/debug"
	"testing"
)

// TestResetPeakRSS: a 128 MiB buffer raises the peak; once it is freed and
// the peak reset, the peak reads at least 64 MiB lower.
func TestResetPeakRSS(t *testing.T) {
	buf := make([]byte, 128<<20)
	for i := 0; i < len(buf); i += 4096 {
		buf[i] = 1
	}
	high := PeakRSSMB()
	runtime.KeepAlive(buf)
	buf = nil
	runtime.GC()
	debug.FreeOSMemory()
	if !ResetPeakRSS() {
		t.Skip("/proc/self/clear_refs is not writable here")
	}
	if low := PeakRSSMB(); !(high > 128) || !(low < high-64) {
		t.Fatalf("peak %.1f MiB with the buffer, %.1f MiB after the reset", high, low)
	}
}
