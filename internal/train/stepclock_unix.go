//go:build unix

package train

import (
	"os"
	"syscall"
)

// readHostCounters reads /proc/stat (where there is one) and getrusage;
// what cannot be read is marked not measured.
func readHostCounters() hostCounters {
	var h hostCounters
	if f, err := os.Open("/proc/stat"); err == nil {
		var buf [512]byte // the aggregate cpu line comes first; the rest (per-CPU lines, interrupts) can be long
		n, _ := f.Read(buf[:])
		f.Close()
		if st, tot, err := parseProcStatCPU(buf[:n]); err == nil {
			h.steal, h.total, h.statOK = st, tot, true
		}
	}
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		h.nivcsw, h.rusageOK = int64(ru.Nivcsw), true
	}
	return h
}
