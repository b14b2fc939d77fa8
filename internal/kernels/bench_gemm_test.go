package kernels

import (
	"context"
	"testing"
	"time"
)

// TestBenchGEMM runs the harness on small shapes: every layout of every
// shape is reported per thread count, with positive rates, then one peak
// summary per thread count; the thread setting is restored; bad options
// and a cancelled context are errors.
func TestBenchGEMM(t *testing.T) {
	saved := Threads()
	var prods []GEMMBench
	var peaks []PeakBench
	err := BenchGEMM(context.Background(), GEMMBenchOptions{
		Threads: []int{1, 2}, Duration: time.Millisecond, Shapes: [][3]int{{16, 8, 12}, {5, 7, 3}},
		Product: func(b GEMMBench) { prods = append(prods, b) },
		Peak:    func(p PeakBench) { peaks = append(peaks, p) },
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(prods) != 2*2*len(GEMMBenchLayouts) || len(peaks) != 2 {
		t.Fatalf("%d products and %d peaks, want 12 and 2", len(prods), len(peaks))
	}
	for i, p := range prods {
		wantT := 1 + i/6
		if p.Threads != wantT || p.Layout != GEMMBenchLayouts[i%3] || !(p.GFLOPS > 0) || !(p.Peak > 0) {
			t.Errorf("product %d: %+v", i, p)
		}
	}
	for i, p := range peaks {
		if p.Threads != i+1 || p.Probes != 6 || !(p.Min <= p.GFLOPS && p.GFLOPS <= p.Max) {
			t.Errorf("peak %d: %+v", i, p)
		}
	}
	if Threads() != saved {
		t.Errorf("threads %d after the bench, want %d", Threads(), saved)
	}
	for _, bad := range []GEMMBenchOptions{{Threads: []int{1}}, {Duration: time.Millisecond}, {Threads: []int{0}, Duration: time.Millisecond}} {
		if err := BenchGEMM(context.Background(), bad); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := BenchGEMM(ctx, GEMMBenchOptions{Threads: []int{1}, Duration: time.Millisecond}); err != context.Canceled {
		t.Errorf("cancelled: got %v", err)
	}
}
