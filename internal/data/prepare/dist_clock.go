package prepare

import (
	"fmt"
	"syscall"
	"time"
)

// clock is a phase's start: wall time and this process's CPU time.
type clock struct {
	wall time.Time
	cpu  float64
}

func startClock() clock { return clock{wall: time.Now(), cpu: cpuSeconds()} }

// record stores the wall and CPU seconds of phase name since c. CPU time
// is the process's (user + system): per rank under mpirun, for all ranks
// together with in-process ranks.
func (w *distWork) record(name string, c clock) {
	w.timings[name] = time.Since(c.wall).Seconds()
	w.timings[name+"_cpu"] = cpuSeconds() - c.cpu
	w.p.opts.Log.Info("prepare: phase done", "rank", w.c.Rank(), "phase", name,
		"wall_s", fmt.Sprintf("%.2f", w.timings[name]), "cpu_s", fmt.Sprintf("%.2f", w.timings[name+"_cpu"]))
}

// cpuSeconds is the user + system CPU time of this process so far.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}
