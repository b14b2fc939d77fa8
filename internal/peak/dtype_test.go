package peak

import (
	"strings"
	"testing"
	"time"
)

// TestResolveFor: fp32 is Resolve; bf16 on a bf16 kernel reads and probes
// the bf16 peak under its own key (never the FMA entry, never a multiple of
// it); bf16 on the reference kernel divides by the FMA peak; a configured
// peak is used as given.
func TestResolveFor(t *testing.T) {
	dir := t.TempDir()
	probe := func(int, int, time.Duration) float64 { return 100 }
	o := Options{Probe: probe, Threads: 2, CacheDir: dir}
	p32, d32 := ResolveFor(o, "fp32", "avx512bf16")
	if p32.GFLOPS != 100 || d32 != "fp32 fma" || p32.Key != CurrentKey(2) {
		t.Errorf("fp32: %v GFLOP/s %q key %v", p32.GFLOPS, d32, p32.Key)
	}
	if _, _, err := Record(CachePath(dir), BF16Key(2), Entry{GFLOPS: 40, MeasuredAt: time.Now()}, false); err != nil {
		t.Fatal(err)
	}
	p16, d16 := ResolveFor(o, "bf16", "avx512bf16")
	// the probe (100) reads above the cached 40: the bf16 entry is raised, the FMA one untouched
	if p16.Key != BF16Key(2) || p16.GFLOPS != 100 || !strings.Contains(d16, "avx512bf16") {
		t.Errorf("bf16: %+v %q", p16, d16)
	}
	slow := Options{Probe: func(int, int, time.Duration) float64 { return 10 }, Threads: 2, CacheDir: dir}
	if p, _ := ResolveFor(slow, "bf16", "avx512bf16"); p.GFLOPS != 100 || p.Source != Cached {
		t.Errorf("bf16 cached: %+v", p)
	}
	if p, d := ResolveFor(slow, "bf16", "ref"); p.Key != CurrentKey(2) || p.GFLOPS != 100 || !strings.Contains(d, "reference") {
		t.Errorf("bf16 ref: %+v %q", p, d)
	}
	o.Configured = 500
	if p, d := ResolveFor(o, "bf16", "avx512bf16"); p.GFLOPS != 500 || d != "bf16 (configured)" {
		t.Errorf("bf16 configured: %v %q", p.GFLOPS, d)
	}
}
