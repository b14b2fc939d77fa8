package peak

import (
	"testing"
	"time"
)

// TestResolveFor: fp32 is Resolve; bf16 doubles a measured peak (and its
// probe, keeping the ratio) and keeps a configured one as given.
func TestResolveFor(t *testing.T) {
	probe := func(int, int, time.Duration) float64 { return 100 }
	o := Options{Probe: probe, Threads: 2, CacheDir: t.TempDir()}
	p32, d32 := ResolveFor(o, "fp32")
	p16, d16 := ResolveFor(o, "bf16")
	if p32.GFLOPS != 100 || d32 != "fp32 fma" {
		t.Errorf("fp32: %v GFLOP/s %q, want 100 \"fp32 fma\"", p32.GFLOPS, d32)
	}
	if p16.GFLOPS != 2*p32.GFLOPS || p16.ProbeRatio != p32.ProbeRatio || p16.Probe != 2*p32.Probe || d16 == d32 {
		t.Errorf("bf16: %+v %q, want twice %+v", p16, d16, p32)
	}
	o.Configured = 500
	if p, d := ResolveFor(o, "bf16"); p.GFLOPS != 500 || d != "bf16 (configured)" {
		t.Errorf("bf16 configured: %v %q", p.GFLOPS, d)
	}
}
