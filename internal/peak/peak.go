// Package peak is the FMA peak of this machine, the denominator of mfu.
//
// One short probe (kernels.PeakGFLOPS) reads anywhere from half to all of
// the real peak when other work shares the cores, and an mfu divided by it
// moves with the neighbours. So the peak is measured as the maximum of
// several probes, cached per machine key (CPU model, GEMM implementation
// and CPU features, thread count) in the user's cache directory with the
// date it was measured, and only ever raised: a later, higher measurement
// replaces the cached value, a lower one does not (it is evidence of
// contention, not a new peak).
//
// Resolve picks the peak of a run: train.peak_gflops when it is set
// ("configured"), else the cached value ("cached", still checked by a short
// probe that can raise it and that reveals contention), else a probe now
// whose result is cached ("probed"). Bench measures carefully and writes
// the cache (kestrel bench peak).
package peak

import (
	"bufio"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/kestrel-lm/kestrel/internal/kernels"
)

// Source says where a run's peak came from; it is recorded in the run
// manifest as peak_source.
type Source string

// The sources of a peak, in the order Resolve tries them.
const (
	Configured Source = "configured" // train.peak_gflops > 0
	Cached     Source = "cached"     // the cache of this machine key
	Probed     Source = "probed"     // measured at start-up (and cached)
)

// ContentionRatio is the probe ÷ cached-peak ratio below which a start-up
// probe counts as evidence that other work shares the cores. On two cores,
// one busy loop beside the probe reads about 0.75 (one probe thread keeps
// its core, the other gets half of one); the maximum of three quiet probes
// reads above 0.9.
const ContentionRatio = 0.8

// Probe lengths: the short check of a cached peak at start-up, and the
// measurement made when nothing is cached (once per machine key). The check
// is 3 × 25 ms (75 ms, down from 3 × 100 ms): a short run's start-up is
// counted against its wall time (docs/performance.md, "Small models").
const (
	checkReps  = 3
	checkEach  = 25 * time.Millisecond
	probeReps  = 5
	probeEach  = 200 * time.Millisecond
	startupHow = "start-up probe"
)

// Key identifies the machine a peak belongs to: the same CPU model, GEMM
// implementation, CPU features and thread count share one cached peak.
type Key struct {
	CPU      string `json:"cpu"`
	Impl     string `json:"impl"`
	Features string `json:"features"`
	Threads  int    `json:"threads"`
}

// CurrentKey is the key of this machine at the given thread count.
func CurrentKey(threads int) Key {
	return Key{CPU: CPUModel(), Impl: kernels.Impl(), Features: kernels.FeatureString(), Threads: max(threads, 1)}
}

// String is the key as stored in the cache file.
func (k Key) String() string {
	return fmt.Sprintf("%s | gemm %s (%s) | %d threads", k.CPU, k.Impl, k.Features, k.Threads)
}

// CPUModel is the CPU's model name from /proc/cpuinfo, or GOARCH where that
// cannot be read.
func CPUModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return runtime.GOARCH
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return runtime.GOARCH
}

// Prober measures the FMA peak in GFLOP/s on threads threads: the maximum of
// reps probes of about each. MaxProbe is the real one; tests substitute
// their own.
type Prober func(threads, reps int, each time.Duration) float64

// MaxProbe is the Prober of kernels.PeakGFLOPS: the largest of reps probes.
func MaxProbe(threads, reps int, each time.Duration) float64 {
	var best float64
	for range max(reps, 1) {
		best = max(best, kernels.PeakGFLOPS(threads, each))
	}
	return best
}

// Options configure Resolve.
type Options struct {
	// Configured is train.peak_gflops: > 0 is used as is (nothing is
	// measured or cached).
	Configured float64
	// Threads the kernels run on (0 = kernels.Threads()).
	Threads int
	// CacheDir holds peak.json ("" = Dir(): $KESTREL_CACHE_DIR, else the
	// user's cache directory + /kestrel).
	CacheDir string
	// Probe measures (nil = MaxProbe).
	Probe Prober
	// Logger receives the warnings: contention, an unreadable or corrupt
	// cache file, a failed cache write (nil = slog.Default()).
	Logger *slog.Logger
	// Now stamps new measurements (nil = time.Now).
	Now func() time.Time
	// BF16 resolves the bf16 peak instead of the FMA peak: cached under
	// BF16Key, probed by kernels.PeakGFLOPSBF16 (ResolveFor sets it).
	BF16 bool
}

// Peak is the resolved peak of a run.
type Peak struct {
	GFLOPS     float64
	Source     Source
	MeasuredAt time.Time // when GFLOPS was measured (zero when configured)
	Key        Key       // zero when configured
	CachePath  string    // the cache file consulted ("" when configured or none)
	// Probe is what this start-up probe read, in GFLOP/s (0 when none ran),
	// and ProbeRatio is Probe ÷ GFLOPS (0 when none ran). A ratio below
	// ContentionRatio means other work shared the cores at start-up.
	Probe      float64
	ProbeRatio float64
}

// Contended reports whether the start-up probe read far below the peak.
func (p Peak) Contended() bool { return p.ProbeRatio > 0 && p.ProbeRatio < ContentionRatio }

// FLOPS is the peak in FLOP/s.
func (p Peak) FLOPS() float64 { return p.GFLOPS * 1e9 }

// Resolve returns the peak a run divides by: the configured value, else the
// cached one for this machine key (a short probe checks it: a higher reading
// raises the cache and is used, a reading below ContentionRatio × the cached
// value is logged as contention), else a probe now, written to the cache.
// Cache trouble never fails a run: an unreadable or corrupt file is reported
// and replaced, a failed write is reported.
func Resolve(o Options) Peak {
	if o.Configured > 0 {
		return Peak{GFLOPS: o.Configured, Source: Configured}
	}
	log, probe, now := o.Logger, o.Probe, o.Now
	if log == nil {
		log = slog.Default()
	}
	if probe == nil {
		probe = MaxProbe
		if o.BF16 {
			probe = maxProbeBF16
		}
	}
	if now == nil {
		now = time.Now
	}
	threads := o.Threads
	if threads <= 0 {
		threads = kernels.Threads()
	}
	key := CurrentKey(threads)
	if o.BF16 {
		key = BF16Key(threads)
	}
	p := Peak{Key: key}
	dir := o.CacheDir
	if dir == "" {
		var err error
		if dir, err = Dir(); err != nil {
			log.Warn("no cache directory for the FMA peak; it is probed at every start", "err", err)
		}
	}
	var cached Entry
	found := false
	if dir != "" {
		p.CachePath = CachePath(dir)
		c, err := Load(p.CachePath)
		if err != nil {
			log.Warn("ignoring the FMA peak cache; it will be replaced", "file", p.CachePath, "err", err)
		}
		cached, found = c.Peaks[key.String()]
	}
	if found {
		got := probe(threads, checkReps, checkEach)
		p.GFLOPS, p.Source, p.MeasuredAt = cached.GFLOPS, Cached, cached.MeasuredAt
		p.Probe, p.ProbeRatio = got, got/cached.GFLOPS
		switch {
		case got > cached.GFLOPS:
			p.GFLOPS, p.Source, p.MeasuredAt, p.ProbeRatio = got, Probed, now().UTC(), 1
			p.record(log, fmt.Sprintf("%s: max of %d × %v", startupHow, checkReps, checkEach))
		case p.Contended():
			log.Warn("start-up FMA probe read far below the cached peak: other work shares the cores (mfu uses the cached peak)",
				"probe_gflops", fmt.Sprintf("%.1f", got), "peak_gflops", fmt.Sprintf("%.1f", cached.GFLOPS),
				"ratio", fmt.Sprintf("%.2f", p.ProbeRatio), "cache", p.CachePath)
		}
		return p
	}
	got := probe(threads, probeReps, probeEach)
	p.GFLOPS, p.Source, p.MeasuredAt, p.Probe, p.ProbeRatio = got, Probed, now().UTC(), got, 1
	if p.CachePath != "" {
		p.record(log, fmt.Sprintf("%s: max of %d × %v", startupHow, probeReps, probeEach))
	}
	return p
}

// record raises the cached value of p.Key to p (a warning when that fails).
func (p Peak) record(log *slog.Logger, how string) {
	if _, _, err := Record(p.CachePath, p.Key, Entry{GFLOPS: p.GFLOPS, MeasuredAt: p.MeasuredAt, How: how}, false); err != nil {
		log.Warn("could not cache the FMA peak", "file", p.CachePath, "err", err)
	}
}
