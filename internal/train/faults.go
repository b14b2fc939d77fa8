package train

import (
	"fmt"
	"math"
	"time"

	"github.com/kestrel-lm/kestrel/internal/runlog"
)

// Validate reports [debug] fields out of range, naming them.
func (d DebugConfig) Validate() error {
	for _, f := range []struct {
		name string
		v    int
	}{{"nan_at_step", d.NaNAtStep}, {"lr_spike_at_step", d.LRSpikeAtStep}, {"lr_spike_steps", d.LRSpikeSteps},
		{"lr_high_from_step", d.LRHighFromStep}, {"corrupt_batch_at_step", d.CorruptBatchAtStep},
		{"poison_data_at_step", d.PoisonDataAtStep}, {"poison_data_steps", d.PoisonDataSteps}, {"stall_at_step", d.StallAtStep},
		{"hang_at_step", d.HangAtStep}, {"hang_rank", d.HangRank}} {
		if f.v < 0 || f.v > maxFaultStep {
			return fmt.Errorf("debug.%s must be in [0, %d], got %d", f.name, maxFaultStep, f.v)
		}
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"lr_spike_factor", d.LRSpikeFactor}, {"lr_high_factor", d.LRHighFactor}} {
		if !(f.v > 0) || math.IsInf(f.v, 0) {
			return fmt.Errorf("debug.%s must be a finite number > 0, got %g", f.name, f.v)
		}
	}
	if !(d.StallSeconds >= 0) || d.StallSeconds > 3600 {
		return fmt.Errorf("debug.stall_seconds must be in [0, 3600], got %g", d.StallSeconds)
	}
	return nil
}

// maxFaultStep bounds the step numbers of [debug] so that step arithmetic
// cannot overflow.
const maxFaultStep = 1 << 40

// faults applies the [debug] fault injections at a step. A one-off fault
// fires only on the first pass through its step: a step that a trajectory
// abandoned by a rewind already trained (interventions.jsonl, every
// intervention, superseded ones included) does not meet it again. The
// persistent and data faults fire on every pass. So a drill's outcome is a
// pure function of (config, interventions), and a rescue never switches a
// fault off: it has to get past it.
type faults struct {
	d DebugConfig
	// rewound holds, per intervention, the steps (ToStep, FromStep] that
	// the abandoned trajectory trained.
	rewound [][2]int
}

func newFaults(d DebugConfig, all []runlog.Intervention) faults {
	f := faults{d: d}
	for _, iv := range all {
		if iv.FromStep > iv.ToStep {
			f.rewound = append(f.rewound, [2]int{iv.ToStep, iv.FromStep})
		}
	}
	return f
}

// firstPass reports whether no abandoned trajectory trained step s.
func (f *faults) firstPass(s int) bool {
	for _, r := range f.rewound {
		if s > r[0] && s <= r[1] {
			return false
		}
	}
	return true
}

// lrFactor is the injected factor on the learning rate of step s.
func (f *faults) lrFactor(s int) float64 {
	x := 1.0
	// The spike is one event: once a trajectory reached its first step, a
	// rollback replays none of its steps with it.
	if d := f.d; d.LRSpikeAtStep > 0 && s >= d.LRSpikeAtStep && s < d.LRSpikeAtStep+max(d.LRSpikeSteps, 1) && f.firstPass(d.LRSpikeAtStep) {
		x *= d.LRSpikeFactor
	}
	if d := f.d; d.LRHighFromStep > 0 && s >= d.LRHighFromStep {
		x *= d.LRHighFactor
	}
	return x
}

// nan reports whether step s gets a NaN loss and gradient.
func (f *faults) nan(s int) bool { return s == f.d.NaNAtStep && s > 0 && f.firstPass(s) }

// stall is how long step s sleeps before its forward pass.
func (f *faults) stall(s int) time.Duration {
	if s != f.d.StallAtStep || s <= 0 || !f.firstPass(s) {
		return 0
	}
	return time.Duration(f.d.StallSeconds * float64(time.Second))
}

// poisoned reports whether the batch of the 1-based data step ds is
// replaced by random tokens.
func (d DebugConfig) poisoned(ds int) bool {
	if ds <= 0 {
		return false
	}
	if ds == d.CorruptBatchAtStep {
		return true
	}
	return d.PoisonDataAtStep > 0 && ds >= d.PoisonDataAtStep && ds < d.PoisonDataAtStep+d.PoisonDataSteps
}

// poisonRows overwrites rows r0… of a poisoned data step's batch (inputs
// and targets, T tokens a row) with uniformly random tokens: a pure
// function of (seed, data step, position), so a replay rebuilds them.
func poisonRows(seed uint64, ds, r0, T, vocab int, in, tg []int32) {
	for i := range in {
		in[i] = int32(mix3(seed^0xbadba7c4, uint64(ds), uint64(2*(r0*T+i))) % uint64(vocab))
		tg[i] = int32(mix3(seed^0xbadba7c4, uint64(ds), uint64(2*(r0*T+i)+1)) % uint64(vocab))
	}
}

// tokenEntropy accumulates the unigram histogram of a batch's target
// tokens for batch_token_entropy, with a count array reused across steps
// (only the touched entries are reset).
type tokenEntropy struct {
	counts  []int32
	touched []int32
	n       int
}

func (e *tokenEntropy) reset(vocab int) {
	if len(e.counts) != vocab {
		e.counts = make([]int32, vocab)
	}
	for _, t := range e.touched {
		e.counts[t] = 0
	}
	e.touched, e.n = e.touched[:0], 0
}

// add counts the targets ≥ 0 (positions with a loss).
func (e *tokenEntropy) add(tg []int32) {
	for _, t := range tg {
		if t < 0 || int(t) >= len(e.counts) {
			continue
		}
		if e.counts[t] == 0 {
			e.touched = append(e.touched, t)
		}
		e.counts[t]++
		e.n++
	}
}

// nats is the entropy of the histogram, 0 when it is empty.
func (e *tokenEntropy) nats() float64 {
	if e.n == 0 {
		return 0
	}
	n := float64(e.n)
	var h float64
	for _, t := range e.touched {
		p := float64(e.counts[t]) / n
		h -= p * math.Log(p)
	}
	return h
}
