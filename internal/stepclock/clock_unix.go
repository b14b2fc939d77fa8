//go:build unix

package stepclock

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
	h.runDelay, h.delayOK = readRunDelay()
	return h
}

// readRunDelay sums the run delay (ns a thread was runnable but waited for
// a CPU: the second value of /proc/self/task/TID/schedstat) over the
// process's threads; ok is false where the kernel has no schedstat.
func readRunDelay() (ns int64, ok bool) {
	d, err := os.Open("/proc/self/task")
	if err != nil {
		return 0, false
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return 0, false
	}
	var buf [128]byte
	for _, tid := range names {
		f, err := os.Open("/proc/self/task/" + tid + "/schedstat")
		if err != nil {
			continue // the thread exited
		}
		n, _ := f.Read(buf[:])
		f.Close()
		if v, good := parseSchedstat(buf[:n]); good {
			ns += v
			ok = true
		}
	}
	return ns, ok
}
