// Package stepclock times the span each step line of a training run
// covers — wall time, the process's CPU time and the contention witnesses
// (the host's steal time, involuntary context switches, the threads' run
// delay) — leaving out the evaluations and checkpoints run between steps.
package stepclock

import (
	"bytes"
	"fmt"
	"strconv"
	"time"

	"github.com/kestrel-lm/kestrel/internal/kernels"
	"github.com/kestrel-lm/kestrel/internal/runlog"
)

// Clock measures the span each step line covers — wall time
// (step_time), the process CPU time (cpu_time) and the two contention
// witnesses (cpu_steal_frac, involuntary_ctx_switches) — from the end of
// the previous step line to the end of this one, less the evaluations and
// checkpoints run in between (Pause … Resume), which are reported as
// eval_time and checkpoint_time: the step after an evaluation is timed
// like any other.
type Clock struct {
	files counterFiles // the /proc files behind the witnesses, kept open
	last  time.Time
	cpu   float64
	host  hostCounters

	paused     bool // between Pause and Resume
	pausedAt   time.Time
	pausedCPU  float64
	pausedHost hostCounters
}

// New starts a clock at the current moment. Close it when the run ends.
func New() *Clock {
	c := &Clock{}
	c.last, c.cpu, c.host = time.Now(), kernels.ProcessCPUSeconds(), c.files.read()
	return c
}

// Close closes the files the clock reads; a closed clock reopens them if
// it is used again.
func (c *Clock) Close() { c.files.close() }

// Lap closes the span of step line m and starts the next.
func (c *Clock) Lap(m *runlog.Step) {
	now := time.Now()
	m.StepTime = now.Sub(c.last).Seconds()
	c.last = now
	if cpu := kernels.ProcessCPUSeconds(); cpu > 0 {
		m.CPUTime, c.cpu = cpu-c.cpu, cpu
	}
	h := c.files.read()
	if h.statOK && c.host.statOK && h.total >= c.host.total && h.steal >= c.host.steal {
		m.StealMeasured = true
		if h.total > c.host.total { // else no clock tick fell in the span: no steal seen
			m.CPUStealFrac = float64(h.steal-c.host.steal) / float64(h.total-c.host.total)
		}
	}
	if h.rusageOK && c.host.rusageOK && h.nivcsw >= c.host.nivcsw {
		m.InvoluntaryCtxSwitches, m.CtxSwitchesMeasured = h.nivcsw-c.host.nivcsw, true
	}
	if h.delayOK && c.host.delayOK {
		// A thread that exited takes its delay with it: never negative.
		m.CPUWaitTime, m.WaitMeasured = float64(max(h.runDelay-c.host.runDelay, 0))/1e9, true
	}
	c.host = h
}

// Pause marks the start of work that is not the next step's (an
// evaluation, a checkpoint); while paused it does nothing, so the caller
// pauses only where such work is due (the counters cost ~10–20 µs).
func (c *Clock) Pause() {
	if c.paused {
		return
	}
	c.paused = true
	c.pausedAt, c.pausedCPU, c.pausedHost = time.Now(), kernels.ProcessCPUSeconds(), c.files.read()
}

// Resume ends a pause: the span of the next step line leaves out the wall
// time, CPU time and counters spent since Pause. Without a pause it does
// nothing.
func (c *Clock) Resume() {
	if !c.paused {
		return
	}
	c.paused = false
	c.last = c.last.Add(time.Since(c.pausedAt))
	if cpu := kernels.ProcessCPUSeconds(); cpu > 0 && c.pausedCPU > 0 {
		c.cpu += cpu - c.pausedCPU
	}
	h := c.files.read()
	if h.statOK && c.pausedHost.statOK && c.host.statOK {
		c.host.steal += h.steal - c.pausedHost.steal
		c.host.total += h.total - c.pausedHost.total
	}
	if h.rusageOK && c.pausedHost.rusageOK && c.host.rusageOK {
		c.host.nivcsw += h.nivcsw - c.pausedHost.nivcsw
	}
	if h.delayOK && c.pausedHost.delayOK && c.host.delayOK {
		c.host.runDelay += h.runDelay - c.pausedHost.runDelay
	}
}

// hostCounters are the cumulative counters behind the contention
// witnesses: the host's steal and total CPU time in jiffies (the "cpu"
// line of /proc/stat, Linux) and this process's involuntary context
// switches (getrusage ru_nivcsw, all threads; unix).
type hostCounters struct {
	steal, total uint64
	statOK       bool
	nivcsw       int64
	rusageOK     bool
	runDelay     int64 // ns runnable but not running, summed over the process's threads (schedstat)
	delayOK      bool
}

// parseSchedstat reads the run delay (ns), the second of the three values
// of a /proc/…/schedstat line ("exec_runtime run_delay timeslices").
func parseSchedstat(b []byte) (int64, bool) {
	f := bytes.Fields(b)
	if len(f) < 2 {
		return 0, false
	}
	v, err := strconv.ParseInt(string(f[1]), 10, 64)
	if err != nil || v < 0 {
		return 0, false
	}
	return v, true
}

// parseProcStatCPU reads the aggregate "cpu" line of /proc/stat: the steal
// time (the 8th value) and the total (user, nice, system, idle, iowait,
// irq, softirq and steal; guest time is already counted in user), in
// jiffies. An error names the line and the field.
func parseProcStatCPU(data []byte) (steal, total uint64, err error) {
	line, _, _ := bytes.Cut(data, []byte("\n"))
	f := bytes.Fields(line)
	if len(f) == 0 || string(f[0]) != "cpu" {
		return 0, 0, fmt.Errorf("/proc/stat: first line %.40q is not the aggregate cpu line", line)
	}
	if len(f) < 9 {
		return 0, 0, fmt.Errorf("/proc/stat: cpu line has %d values, want at least 8 (user … steal)", len(f)-1)
	}
	for i := 1; i <= 8; i++ {
		v, err := strconv.ParseUint(string(f[i]), 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("/proc/stat: cpu line, value %d: %w", i, err)
		}
		if total+v < total {
			return 0, 0, fmt.Errorf("/proc/stat: cpu line, value %d: the total overflows", i)
		}
		total += v
		if i == 8 {
			steal = v
		}
	}
	return steal, total, nil
}
