package kernels

import (
	"testing"
	"time"
)

func TestPeakFLOPs(t *testing.T) {
	for _, threads := range []int{0, 1, 2} {
		d := 5 * time.Millisecond
		flops, secs := PeakFLOPs(threads, d)
		if want := max(threads, 1); len(flops) != want || len(secs) != want {
			t.Fatalf("threads %d: %d/%d results, want %d", threads, len(flops), len(secs), want)
		}
		for i := range flops {
			if !(flops[i] > 0) || secs[i] < d.Seconds() {
				t.Errorf("threads %d, thread %d: %v FLOPs in %vs (want > 0 in >= %v)", threads, i, flops[i], secs[i], d)
			}
		}
	}
}
