package faults

import (
	"math"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/runlog"
)

// TestFaults: one-off faults fire on the first pass through their step
// only (a rewind's abandoned trajectory passed it); persistent and data
// faults fire every time; a multi-step spike is one event.
func TestFaults(t *testing.T) {
	d := Default()
	d.LRSpikeAtStep, d.LRSpikeFactor, d.LRSpikeSteps = 70, 1000, 3
	d.LRHighFromStep, d.LRHighFactor = 90, 100
	d.NaNAtStep, d.StallAtStep, d.StallSeconds = 75, 80, 2
	d.PoisonDataAtStep, d.PoisonDataSteps, d.CorruptBatchAtStep = 100, 5, 200
	fresh := New(d, nil)
	if fresh.LRFactor(70) != 1000 || fresh.LRFactor(72) != 1000 || fresh.LRFactor(73) != 1 || fresh.LRFactor(95) != 100 {
		t.Errorf("fresh: LR factors %v %v %v %v", fresh.LRFactor(70), fresh.LRFactor(72), fresh.LRFactor(73), fresh.LRFactor(95))
	}
	if !fresh.NaN(75) || fresh.Stall(80) == 0 {
		t.Error("fresh: the NaN and the stall must fire")
	}
	// The run reached step 70 (the spike's first step) and 85, then was
	// rewound to 60 and 50: the spike, the NaN and the stall do not recur;
	// the persistent LR and the data faults do.
	re := New(d, []runlog.Intervention{{ToStep: 60, FromStep: 70}, {ToStep: 50, FromStep: 85}})
	if re.LRFactor(70) != 1 || re.LRFactor(71) != 1 || re.LRFactor(95) != 100 {
		t.Errorf("rewound: LR factors %v %v %v", re.LRFactor(70), re.LRFactor(71), re.LRFactor(95))
	}
	if re.NaN(75) || re.Stall(80) != 0 {
		t.Error("rewound: a one-off fault recurred")
	}
	for ds, want := range map[int]bool{99: false, 100: true, 104: true, 105: false, 200: true, 0: false} {
		if d.Poisoned(ds) != want {
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
