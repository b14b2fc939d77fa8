package kernels

import (
	"context"
	"strings"
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

// TestBenchGEMMDTypes: with DTypes fp32 and bf16 each product is timed in
// both, alternating (fp32 then bf16 for every layout), each against its
// own peak, with one peak summary per dtype; a dtype other than fp32 or
// bf16 is an error, and bf16 is one on a CPU without AVX512_BF16.
func TestBenchGEMMDTypes(t *testing.T) {
	opt := GEMMBenchOptions{Threads: []int{1}, Duration: time.Millisecond, Shapes: [][3]int{{16, 9, 12}}, DTypes: []string{"fp32", "bf16"}}
	if ok, _ := BF16Hardware(); !ok {
		if err := BenchGEMM(context.Background(), opt); err == nil || !strings.Contains(err.Error(), "avx512") {
			t.Fatalf("bf16 without the hardware: %v, want an error naming the feature", err)
		}
		return
	}
	var prods []GEMMBench
	var peaks []PeakBench
	opt.Product = func(b GEMMBench) { prods = append(prods, b) }
	opt.Peak = func(p PeakBench) { peaks = append(peaks, p) }
	if err := BenchGEMM(context.Background(), opt); err != nil {
		t.Fatal(err)
	}
	if len(prods) != 2*len(GEMMBenchLayouts) || len(peaks) != 2 {
		t.Fatalf("%d products and %d peaks, want %d and 2", len(prods), len(peaks), 2*len(GEMMBenchLayouts))
	}
	for i, p := range prods {
		want, impl := "fp32", Impl()
		if i%2 == 1 {
			want, impl = "bf16", BF16Impl()
		}
		if p.DType != want || p.Impl != impl || p.Layout != GEMMBenchLayouts[i/2] || !(p.GFLOPS > 0) || !(p.Peak > 0) {
			t.Errorf("product %d: %+v, want dtype %s impl %s", i, p, want, impl)
		}
	}
	if peaks[0].DType != "fp32" || peaks[1].DType != "bf16" {
		t.Errorf("peaks %+v, want fp32 then bf16", peaks)
	}
	opt.DTypes = []string{"fp16"}
	if err := BenchGEMM(context.Background(), opt); err == nil {
		t.Error("dtype fp16 accepted")
	}
}
