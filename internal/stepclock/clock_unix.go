//go:build unix

package stepclock

import (
	"io"
	"os"
	"syscall"
)

// counterFiles holds the /proc files the contention witnesses read,
// opened once and re-read in place (pread at offset 0 regenerates a proc
// file's content): /proc/stat, the process's task directory and each
// thread's schedstat by thread id. A file that cannot be opened is retried
// at the next read; a thread that exited is dropped.
type counterFiles struct {
	stat    *os.File
	task    *os.File
	threads map[string]*os.File
	seen    map[string]bool // the thread ids of the current listing (reused)
}

// read reads /proc/stat (where there is one), getrusage and the threads'
// run delay; what cannot be read is marked not measured.
func (cf *counterFiles) read() hostCounters {
	var h hostCounters
	if cf.stat == nil {
		cf.stat, _ = os.Open("/proc/stat")
	}
	if cf.stat != nil {
		var buf [512]byte // the aggregate cpu line comes first; the rest (per-CPU lines, interrupts) can be long
		n, _ := cf.stat.ReadAt(buf[:], 0)
		if st, tot, err := parseProcStatCPU(buf[:n]); err == nil {
			h.steal, h.total, h.statOK = st, tot, true
		}
	}
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		h.nivcsw, h.rusageOK = int64(ru.Nivcsw), true
	}
	h.runDelay, h.delayOK = cf.runDelay()
	return h
}

// runDelay sums the run delay (ns a thread was runnable but waited for a
// CPU: the second value of /proc/self/task/TID/schedstat) over the
// process's threads, listed afresh at each read; ok is false where the
// kernel has no schedstat.
func (cf *counterFiles) runDelay() (ns int64, ok bool) {
	if cf.task == nil {
		var err error
		if cf.task, err = os.Open("/proc/self/task"); err != nil {
			return 0, false
		}
		cf.threads, cf.seen = map[string]*os.File{}, map[string]bool{}
	} else if _, err := cf.task.Seek(0, io.SeekStart); err != nil {
		return 0, false
	}
	names, err := cf.task.Readdirnames(-1)
	if err != nil {
		return 0, false
	}
	clear(cf.seen)
	var buf [128]byte
	for _, tid := range names {
		cf.seen[tid] = true
		f := cf.threads[tid]
		if f == nil {
			if f, err = os.Open("/proc/self/task/" + tid + "/schedstat"); err != nil {
				continue // the thread exited
			}
			cf.threads[tid] = f
		}
		n, err := f.ReadAt(buf[:], 0)
		if n == 0 && err != nil { // the thread exited since the listing
			continue
		}
		if v, good := parseSchedstat(buf[:n]); good {
			ns += v
			ok = true
		}
	}
	for tid, f := range cf.threads { // threads gone from the listing
		if !cf.seen[tid] {
			f.Close()
			delete(cf.threads, tid)
		}
	}
	return ns, ok
}

// close closes the files.
func (cf *counterFiles) close() {
	for _, f := range []*os.File{cf.stat, cf.task} {
		if f != nil {
			f.Close()
		}
	}
	for tid, f := range cf.threads {
		f.Close()
		delete(cf.threads, tid)
	}
	cf.stat, cf.task = nil, nil
}
