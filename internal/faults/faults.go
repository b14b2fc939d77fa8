// Package faults injects the faults of a run config's [debug] section
// into training — one-off (a transient the run meets once), persistent
// (in force in every trajectory) and data faults (tied to the data steps) —
// for the monitor's tests and `kestrel drill`.
package faults

import (
	"fmt"
	"math"
	"time"

	"github.com/kestrel-lm/kestrel/internal/datasrc"
	"github.com/kestrel-lm/kestrel/internal/runlog"
)

// Validate reports [debug] fields out of range, naming them.
func (d Config) Validate() error {
	for _, f := range []struct {
		name string
		v    int
	}{{"nan_at_step", d.NaNAtStep}, {"lr_spike_at_step", d.LRSpikeAtStep}, {"lr_spike_steps", d.LRSpikeSteps},
		{"lr_high_from_step", d.LRHighFromStep}, {"corrupt_batch_at_step", d.CorruptBatchAtStep},
		{"poison_data_at_step", d.PoisonDataAtStep}, {"poison_data_steps", d.PoisonDataSteps}, {"stall_at_step", d.StallAtStep},
		{"base64_data_at_step", d.Base64DataAtStep}, {"base64_data_steps", d.Base64DataSteps},
		{"hang_at_step", d.HangAtStep}, {"hang_rank", d.HangRank},
		{"leak_from_step", d.LeakFromStep}, {"corrupt_checkpoint_at_step", d.CorruptCheckpointAtStep}} {
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
	if !(d.LeakMBPerStep >= 0) || d.LeakMBPerStep > 1024 {
		return fmt.Errorf("debug.leak_mb_per_step must be in [0, 1024], got %g", d.LeakMBPerStep)
	}
	if !(d.StallSeconds >= 0) || d.StallSeconds > 3600 {
		return fmt.Errorf("debug.stall_seconds must be in [0, 3600], got %g", d.StallSeconds)
	}
	return nil
}

// maxFaultStep bounds the step numbers of [debug] so that step arithmetic
// cannot overflow.
const maxFaultStep = 1 << 40

// Set applies the [debug] fault injections at a step. A one-off fault
// fires only on the first pass through its step: a step that a trajectory
// abandoned by a rewind already trained (interventions.jsonl, every
// intervention, superseded ones included) does not meet it again. The
// persistent and data faults fire on every pass. So a drill's outcome is a
// pure function of (config, interventions), and a rescue never switches a
// fault off: it has to get past it.
type Set struct {
	d Config
	// rewound holds, per intervention, the steps (ToStep, FromStep] that
	// the abandoned trajectory trained.
	rewound [][2]int
	leaked  [][]byte // leak.go: what leak_mb_per_step allocated, kept for the run
}

func New(d Config, all []runlog.Intervention) Set {
	f := Set{d: d}
	for _, iv := range all {
		if iv.FromStep > iv.ToStep {
			f.rewound = append(f.rewound, [2]int{iv.ToStep, iv.FromStep})
		}
	}
	return f
}

// firstPass reports whether no abandoned trajectory trained step s.
func (f *Set) firstPass(s int) bool {
	for _, r := range f.rewound {
		if s > r[0] && s <= r[1] {
			return false
		}
	}
	return true
}

// LRFactor is the injected factor on the learning rate of step s.
func (f *Set) LRFactor(s int) float64 {
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

// NaN reports whether step s gets a NaN loss and gradient.
func (f *Set) NaN(s int) bool { return s == f.d.NaNAtStep && s > 0 && f.firstPass(s) }

// Stall is how long step s sleeps before its forward pass.
func (f *Set) Stall(s int) time.Duration {
	if s != f.d.StallAtStep || s <= 0 || !f.firstPass(s) {
		return 0
	}
	return time.Duration(f.d.StallSeconds * float64(time.Second))
}

// Poisoned reports whether the batch of the 1-based data step ds is
// replaced by random tokens.
func (d Config) Poisoned(ds int) bool {
	if ds <= 0 {
		return false
	}
	if ds == d.CorruptBatchAtStep {
		return true
	}
	return d.PoisonDataAtStep > 0 && ds >= d.PoisonDataAtStep && ds < d.PoisonDataAtStep+d.PoisonDataSteps
}

// PoisonRows overwrites rows r0… of a poisoned data step's batch (inputs
// and targets, T tokens a row) with uniformly random tokens: a pure
// function of (seed, data step, position), so a replay rebuilds them.
func PoisonRows(seed uint64, ds, r0, T, vocab int, in, tg []int32) {
	for i := range in {
		in[i] = int32(datasrc.Mix3(seed^0xbadba7c4, uint64(ds), uint64(2*(r0*T+i))) % uint64(vocab))
		tg[i] = int32(datasrc.Mix3(seed^0xbadba7c4, uint64(ds), uint64(2*(r0*T+i)+1)) % uint64(vocab))
	}
}

// Config is the [debug] section: fault-injection knobs for testing the
// stability toolkit, the monitor and the rescue (`kestrel drill`). All are
// off by default. Steps are 1-based (the step number written to
// metrics.jsonl). A one-off fault stands for a transient (a bad update, a
// flipped bit): it happens the first time the run trains its step, and the
// same step trained again after a rollback does not meet it. A persistent
// fault (lr_high_*) and a data fault (poison_data_*, corrupt_batch_at_step)
// stay in force in every trajectory: a rescue must cure them, by a lower LR
// or by skipping the data.
type Config struct {
	NaNAtStep          int     `toml:"nan_at_step" comment:"one-off: inject a NaN into the loss and gradients at this step (0 = never); the run must stop without checkpointing"`
	LRSpikeAtStep      int     `toml:"lr_spike_at_step" comment:"one-off: multiply the learning rate by lr_spike_factor for lr_spike_steps steps from this step (0 = never)"`
	LRSpikeFactor      float64 `toml:"lr_spike_factor" comment:"learning-rate multiplier of the injected spike"`
	LRSpikeSteps       int     `toml:"lr_spike_steps" comment:"how many steps the LR spike lasts"`
	LRHighFromStep     int     `toml:"lr_high_from_step" comment:"persistent: multiply the learning rate by lr_high_factor from this step to the end, in every trajectory (0 = never)"`
	LRHighFactor       float64 `toml:"lr_high_factor" comment:"learning-rate multiplier of lr_high_from_step"`
	CorruptBatchAtStep int     `toml:"corrupt_batch_at_step" comment:"data: replace the batch of this data step with uniformly random tokens, in every trajectory (the data step of training step s is s plus the data steps a rewind skipped before it; 0 = never)"`
	PoisonDataAtStep   int     `toml:"poison_data_at_step" comment:"data: replace the batches of poison_data_steps data steps from this one with uniformly random tokens, in every trajectory: only skipping the window avoids it (0 = never)"`
	PoisonDataSteps    int     `toml:"poison_data_steps" comment:"how many data steps poison_data_at_step poisons"`
	StallAtStep        int     `toml:"stall_at_step" comment:"one-off: the step sleeps stall_seconds before its forward pass, as a hung filesystem or a frozen neighbour would make it (0 = never)"`
	StallSeconds       float64 `toml:"stall_seconds" comment:"how long stall_at_step sleeps"`

	// Base64 garbage (garbage.go).
	Base64DataAtStep int `toml:"base64_data_at_step" comment:"data: replace the batches of base64_data_steps data steps from this one with random base64 text encoded by the run's tokenizer, in every trajectory, as a scraped page of inline images would be (the garbage_batch SEV2; 0 = never)"`
	Base64DataSteps  int `toml:"base64_data_steps" comment:"how many data steps base64_data_at_step replaces"`

	// Data parallelism (docs/distributed.md).
	HangAtStep int `toml:"hang_at_step" comment:"data-parallel runs: rank hang_rank stops before this step's collectives and waits until the run is killed, to test the rank_hang SEV0 (0 = never)"`
	HangRank   int `toml:"hang_rank" comment:"the rank that hangs at hang_at_step"`

	// Process and checkpoint faults (leak.go).
	LeakFromStep            int     `toml:"leak_from_step" comment:"persistent: from this step on, every step allocates leak_mb_per_step MiB, touches it and never frees it, as a leak would (the memory_creep SEV1; 0 = never)"`
	LeakMBPerStep           float64 `toml:"leak_mb_per_step" comment:"MiB leaked per step from leak_from_step"`
	CorruptCheckpointAtStep int     `toml:"corrupt_checkpoint_at_step" comment:"one-off: flip one byte of the checkpoint written at this step after it was installed, before its verification (the checkpoint_failed SEV0; 0 = never); like the other one-off faults, a rewind's abandoned steps do not meet it again, a plain resume that retrains the step does"`
}

// Default returns the defaults of the [debug] section.
func Default() Config {
	return Config{LRSpikeFactor: 10, LRSpikeSteps: 3, LRHighFactor: 10, PoisonDataSteps: 5, Base64DataSteps: 1, StallSeconds: 5, LeakMBPerStep: 1}
}
