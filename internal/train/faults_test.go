package train

import (
	"math"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/runlog"
)

// TestFaults: one-off faults fire on the first pass through their step
// only (a rewind's abandoned trajectory passed it); persistent and data
// faults fire every time; a multi-step spike is one event.
func TestFaults(t *testing.T) {
	d := DefaultDebugConfig()
	d.LRSpikeAtStep, d.LRSpikeFactor, d.LRSpikeSteps = 70, 1000, 3
	d.LRHighFromStep, d.LRHighFactor = 90, 100
	d.NaNAtStep, d.StallAtStep, d.StallSeconds = 75, 80, 2
	d.PoisonDataAtStep, d.PoisonDataSteps, d.CorruptBatchAtStep = 100, 5, 200
	fresh := newFaults(d, nil)
	if fresh.lrFactor(70) != 1000 || fresh.lrFactor(72) != 1000 || fresh.lrFactor(73) != 1 || fresh.lrFactor(95) != 100 {
		t.Errorf("fresh: LR factors %v %v %v %v", fresh.lrFactor(70), fresh.lrFactor(72), fresh.lrFactor(73), fresh.lrFactor(95))
	}
	if !fresh.nan(75) || fresh.stall(80) == 0 {
		t.Error("fresh: the NaN and the stall must fire")
	}
	// The run reached step 70 (the spike's first step) and 85, then was
	// rewound to 60 and 50: the spike, the NaN and the stall do not recur;
	// the persistent LR and the data faults do.
	re := newFaults(d, []runlog.Intervention{{ToStep: 60, FromStep: 70}, {ToStep: 50, FromStep: 85}})
	if re.lrFactor(70) != 1 || re.lrFactor(71) != 1 || re.lrFactor(95) != 100 {
		t.Errorf("rewound: LR factors %v %v %v", re.lrFactor(70), re.lrFactor(71), re.lrFactor(95))
	}
	if re.nan(75) || re.stall(80) != 0 {
		t.Error("rewound: a one-off fault recurred")
	}
	for ds, want := range map[int]bool{99: false, 100: true, 104: true, 105: false, 200: true, 0: false} {
		if d.poisoned(ds) != want {
			t.Errorf("poisoned(%d) = %v", ds, !want)
		}
	}
	bad := d
	bad.LRHighFactor = math.Inf(1)
	if bad.Validate() == nil {
		t.Error("an infinite lr_high_factor passed Validate")
	}
	bad = d
	bad.PoisonDataAtStep = -1
	if bad.Validate() == nil {
		t.Error("a negative poison_data_at_step passed Validate")
	}
}

// TestTokenEntropy: uniform over k tokens is ln k; one repeated token is 0
// and still measured; padding (< 0) is not counted; reset forgets.
func TestTokenEntropy(t *testing.T) {
	var e tokenEntropy
	e.reset(256)
	e.add([]int32{1, 2, 3, 4, -1, -1})
	if got := e.nats(); math.Abs(got-math.Log(4)) > 1e-12 || e.n != 4 {
		t.Errorf("4 distinct: %v nats over %d tokens", got, e.n)
	}
	e.reset(256)
	e.add([]int32{7, 7, 7})
	if e.nats() != 0 || e.n != 3 {
		t.Errorf("repeated: %v over %d", e.nats(), e.n)
	}
	e.reset(256)
	if e.n != 0 || e.nats() != 0 {
		t.Error("reset kept counts")
	}
}

// BenchmarkTokenEntropy is the per-step cost of batch_token_entropy on a
// demo-sized batch (16 × 256 tokens of a vocabulary of 8192).
func BenchmarkTokenEntropy(b *testing.B) {
	tg := make([]int32, 16*256)
	for i := range tg {
		tg[i] = int32(mix3(1, uint64(i), 0) % 8192)
	}
	var e tokenEntropy
	for b.Loop() {
		e.reset(8192)
		e.add(tg)
		_ = e.nats()
	}
}
