package peak

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/kestrel-lm/kestrel/internal/kernels"
)

// BenchOptions configure Bench.
type BenchOptions struct {
	Threads  int           // threads to probe on (0 = kernels.Threads())
	Duration time.Duration // total probing time (0 = 5s)
	Each     time.Duration // one probe (0 = 250ms); Duration/Each probes run, at least one
	CacheDir string        // "" = Dir()
	Replace  bool          // store the result even when the cache holds a higher peak
	Now      func() time.Time
	// Probe runs one probe in GFLOP/s (nil = kernels.PeakGFLOPS, or
	// kernels.PeakGFLOPSBF16 for DType "bf16").
	Probe func(threads int, each time.Duration) float64
	// DType is the arithmetic probed: "" or "fp32", the FMA peak; "bf16",
	// the VDPBF16PS peak, cached under BF16Key (a CPU without AVX512_BF16
	// is an error naming the missing feature).
	DType string
}

// BF16Key is the cache key of the bf16 peak (kestrel bench peak --dtype
// bf16): CurrentKey with the bf16 GEMM implementation (kernels.BF16Impl)
// as its implementation, so it never mixes with the FMA peak's.
func BF16Key(threads int) Key {
	k := CurrentKey(threads)
	k.Impl = "bf16 " + kernels.BF16Impl()
	return k
}

// bf16Probe is kernels.PeakGFLOPSBF16 as a Probe.
func bf16Probe(threads int, each time.Duration) float64 {
	g, _ := kernels.PeakGFLOPSBF16(threads, each)
	return g
}

// BenchResult is a careful measurement of the peak and what the cache holds
// afterwards.
type BenchResult struct {
	Key        Key
	DType      string // BenchOptions.DType
	Threads    int
	Each       time.Duration
	Probes     []float64 // GFLOP/s of each probe, in order
	GFLOPS     float64   // the maximum: the peak
	Median     float64
	Min        float64
	MeasuredAt time.Time
	CachePath  string
	Previous   *Entry // the cached entry before (nil: none)
	Cached     Entry  // the cached entry after
	Stored     bool   // this measurement was written
	// CacheWarning reports an unreadable or corrupt cache file that was
	// replaced ("" when it was fine or absent).
	CacheWarning string
}

// Bench measures the FMA peak carefully (repeated probes for about
// o.Duration, the maximum kept) and records it in the cache, raising only
// unless o.Replace. It stops early, with ctx's error, when ctx ends.
func Bench(ctx context.Context, o BenchOptions) (*BenchResult, error) {
	threads, dur, each := o.Threads, o.Duration, o.Each
	if threads <= 0 {
		threads = kernels.Threads()
	}
	if dur <= 0 {
		dur = 5 * time.Second
	}
	if each <= 0 {
		each = 250 * time.Millisecond
	}
	probe, now := o.Probe, o.Now
	key := CurrentKey(threads)
	switch o.DType {
	case "", "fp32":
	case "bf16":
		if ok, missing := kernels.BF16Hardware(); !ok && probe == nil {
			return nil, fmt.Errorf("--dtype bf16: this CPU has no %s, so there is no bf16 peak to measure", missing)
		}
		key = BF16Key(threads)
		if probe == nil {
			probe = bf16Probe
		}
	default:
		return nil, fmt.Errorf("--dtype: %q is not fp32 or bf16", o.DType)
	}
	if probe == nil {
		probe = kernels.PeakGFLOPS
	}
	if now == nil {
		now = time.Now
	}
	dir := o.CacheDir
	if dir == "" {
		var err error
		if dir, err = Dir(); err != nil {
			return nil, err
		}
	}
	r := &BenchResult{Key: key, DType: o.DType, Threads: threads, Each: each, CachePath: CachePath(dir)}
	c, err := Load(r.CachePath)
	if err != nil {
		r.CacheWarning = err.Error()
	}
	if prev, ok := c.Peaks[r.Key.String()]; ok {
		r.Previous = &prev
	}
	n := max(int(dur/each), 1)
	for range n {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		r.Probes = append(r.Probes, probe(threads, each))
	}
	s := append([]float64(nil), r.Probes...)
	sort.Float64s(s)
	r.Min, r.Median, r.GFLOPS = s[0], s[len(s)/2], s[len(s)-1]
	r.MeasuredAt = now().UTC()
	how := fmt.Sprintf("kestrel bench peak: max of %d × %v", n, each)
	r.Cached, r.Stored, err = Record(r.CachePath, r.Key, Entry{GFLOPS: r.GFLOPS, MeasuredAt: r.MeasuredAt, How: how}, o.Replace)
	if err != nil {
		return nil, err
	}
	return r, nil
}
