package monitor

import (
	"fmt"
	"math"
	"strings"
)

// The second witness of the contention rule (drop): besides the process's
// CPU time per token, which grows under contention too (shared caches, a
// busy SMT sibling), a direct sign that other work holds the cores — the
// hypervisor's steal time (cpu_steal_frac), the kernel preempting the
// process's threads (involuntary_ctx_switches per second of step_time), or
// the threads waiting, runnable, for a CPU (cpu_wait_time per second of
// step_time: a busy neighbour process on the same cores). All are
// optional: a sample that carries none leaves the rule on CPU time alone,
// and it says so.
const (
	// witnessStealRise is the rise of cpu_steal_frac (median, in the
	// share of the host's CPU time) that says a neighbouring guest takes
	// the CPUs.
	witnessStealRise = 0.03
	// witnessPreemptFactor and witnessPreemptMin: involuntary context
	// switches per second (median) that at least doubled and rose by this
	// many say other work preempts the process.
	witnessPreemptFactor = 2.0
	witnessPreemptMin    = 50.0
	// witnessWaitShare is the share of the rise of the wall time per step
	// that the rise of cpu_wait_time per step (medians; summed over
	// threads) must explain to say the threads wait for cores other work
	// holds. A share, not a level: on a machine already shared before the
	// slowdown the threads wait some of the time all along.
	witnessWaitShare = 0.5
)

// witnessRings hold the second witnesses in step with the tokens_per_sec
// window (NaN = not measured at that step).
type witnessRings struct {
	steal   *ring // cpu_steal_frac
	preempt *ring // involuntary_ctx_switches / step_time
	wait    *ring // cpu_wait_time (s per step)
}

// push records one step's witnesses (v: the sample's values).
func (w *witnessRings) push(v map[string]float64) {
	steal, preempt := math.NaN(), math.NaN()
	if x, ok := v["cpu_steal_frac"]; ok && finite(x) && x >= 0 {
		steal = x
	}
	if x, ok := v["involuntary_ctx_switches"]; ok && finite(x) && x >= 0 {
		if st := v["step_time"]; finite(st) && st > 0 {
			preempt = x / st
		}
	}
	wait := math.NaN()
	if x, ok := v["cpu_wait_time"]; ok && finite(x) && x >= 0 {
		wait = x
	}
	w.steal.push(steal)
	w.preempt.push(preempt)
	w.wait.push(wait)
}

// witnessVerdict is what the second witnesses say over the split of the
// throughput window: seen is false when the samples carry none (or too few
// of them); says is true when one of them saw other work take the cores;
// evidence states the numbers.
type witnessVerdict struct {
	seen, says bool
	evidence   string
}

// verdict compares the witnesses' medians before and in the last short
// entries of their windows; wallRise is the rise of the median wall time
// per step over the same split (NaN: not known).
func (w *witnessRings) verdict(short int, wallRise float64) witnessVerdict {
	var v witnessVerdict
	var parts []string
	if ref, now, ok := splitMedians(w.steal, short); ok {
		v.seen = true
		saw := now-ref >= witnessStealRise
		v.says = v.says || saw
		parts = append(parts, fmt.Sprintf("steal time %.1f%% → %.1f%% of the host's CPU time (%s)", 100*ref, 100*now, sawText(saw, fmt.Sprintf("a rise of %.0f points or more says a neighbour takes the CPUs", 100*witnessStealRise))))
	}
	if ref, now, ok := splitMedians(w.preempt, short); ok {
		v.seen = true
		saw := now >= witnessPreemptFactor*ref && now-ref >= witnessPreemptMin
		v.says = v.says || saw
		parts = append(parts, fmt.Sprintf("involuntary context switches %.0f/s → %.0f/s (%s)", ref, now, sawText(saw, fmt.Sprintf("%.0f× and +%.0f/s or more says other work preempts the threads", witnessPreemptFactor, witnessPreemptMin))))
	}
	if ref, now, ok := splitMedians(w.wait, short); ok && finite(wallRise) && wallRise > 0 {
		v.seen = true
		saw := now-ref >= witnessWaitShare*wallRise
		v.says = v.says || saw
		parts = append(parts, fmt.Sprintf("time runnable but waiting for a CPU %.3g s → %.3g s per step, %.0f%% of the wall-time rise (%s)", ref, now, 100*(now-ref)/wallRise, sawText(saw, fmt.Sprintf("%.0f%% or more says other processes hold the cores", 100*witnessWaitShare))))
	}
	v.evidence = strings.Join(parts, ", ")
	return v
}

func sawText(saw bool, rule string) string {
	if saw {
		return "seen: " + rule
	}
	return "not seen: " + rule
}

// riseText states a relative change without rounding a growth away: "grew
// 16%", "did not grow (-2%)".
func riseText(x float64) string {
	if x > 0.005 {
		return fmt.Sprintf("grew %.0f%%", 100*x)
	}
	return fmt.Sprintf("did not grow (%+.0f%%)", 100*x)
}
