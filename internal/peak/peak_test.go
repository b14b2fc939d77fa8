package peak

import (
	"bytes"
	"cmp"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var testNow = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

// fakeProbe returns a Prober that reads v and counts its calls and their
// total probing time.
func fakeProbe(v float64, calls *int, spent *time.Duration) Prober {
	return func(threads, reps int, each time.Duration) float64 {
		*calls++
		*spent += time.Duration(reps) * each
		return v
	}
}

func seed(t *testing.T, dir string, threads int, gflops float64) {
	t.Helper()
	if _, stored, err := Record(CachePath(dir), CurrentKey(threads), Entry{GFLOPS: gflops, MeasuredAt: testNow.Add(-48 * time.Hour), How: "test"}, false); err != nil || !stored {
		t.Fatalf("seeding the cache: stored %v, err %v", stored, err)
	}
}

func TestResolve(t *testing.T) {
	for _, tc := range []struct {
		name       string
		configured float64
		cached     float64 // seeded for 2 threads (0: none)
		cachedAt   int     // threads of the seeded entry (0: 2)
		probe      float64
		want       float64
		source     Source
		probes     int
		cacheAfter float64 // the cached value afterwards (0: no entry)
		contended  bool
	}{
		{name: "configured wins over cache and probe", configured: 300, cached: 228, probe: 100, want: 300, source: Configured, probes: 0, cacheAfter: 228},
		{name: "cached, quiet probe", cached: 228, probe: 220, want: 228, source: Cached, probes: 1, cacheAfter: 228},
		{name: "cached, contended probe", cached: 228, probe: 117, want: 228, source: Cached, probes: 1, cacheAfter: 228, contended: true},
		{name: "cached, higher probe raises", cached: 200, probe: 231, want: 231, source: Probed, probes: 1, cacheAfter: 231},
		{name: "nothing cached: probed and cached", probe: 225, want: 225, source: Probed, probes: 1, cacheAfter: 225},
		{name: "other thread count's entry is not used", cached: 116, cachedAt: 1, probe: 225, want: 225, source: Probed, probes: 1, cacheAfter: 225},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if tc.cached > 0 {
				seed(t, dir, cmp.Or(tc.cachedAt, 2), tc.cached)
			}
			var logs bytes.Buffer
			calls, spent := 0, time.Duration(0)
			p := Resolve(Options{Configured: tc.configured, Threads: 2, CacheDir: dir, Probe: fakeProbe(tc.probe, &calls, &spent),
				Logger: slog.New(slog.NewTextHandler(&logs, nil)), Now: func() time.Time { return testNow }})
			if p.GFLOPS != tc.want || p.Source != tc.source {
				t.Errorf("Resolve = %v GFLOP/s from %q, want %v from %q", p.GFLOPS, p.Source, tc.want, tc.source)
			}
			if calls != tc.probes {
				t.Errorf("probe ran %d times, want %d", calls, tc.probes)
			}
			if p.Contended() != tc.contended || strings.Contains(logs.String(), "far below") != tc.contended {
				t.Errorf("contended = %v (ratio %.2f), log %q; want %v", p.Contended(), p.ProbeRatio, logs.String(), tc.contended)
			}
			if tc.contended && !(strings.Contains(logs.String(), "probe_gflops=117.0") && strings.Contains(logs.String(), "peak_gflops=228.0")) {
				t.Errorf("contention warning lacks both numbers: %q", logs.String())
			}
			if tc.source == Cached && !p.MeasuredAt.Equal(testNow.Add(-48*time.Hour)) {
				t.Errorf("MeasuredAt = %v, want the cached date", p.MeasuredAt)
			}
			if tc.source == Probed && !p.MeasuredAt.Equal(testNow) {
				t.Errorf("MeasuredAt = %v, want now", p.MeasuredAt)
			}
			c, err := Load(CachePath(dir))
			if err != nil {
				t.Fatal(err)
			}
			if got := c.Peaks[CurrentKey(2).String()].GFLOPS; got != tc.cacheAfter {
				t.Errorf("cache afterwards holds %v for 2 threads, want %v", got, tc.cacheAfter)
			}
		})
	}
}

// TestResolveStartupCost: a cached peak is only checked briefly (at most
// 100 ms of probing: a short run's exec → step 1 goal is 0.3 s,
// docs/performance.md "Small models"); the longer probe runs when nothing
// is cached.
func TestResolveStartupCost(t *testing.T) {
	dir := t.TempDir()
	calls, first, again := 0, time.Duration(0), time.Duration(0)
	Resolve(Options{Threads: 2, CacheDir: dir, Probe: fakeProbe(200, &calls, &first), Logger: slog.New(slog.DiscardHandler)})
	Resolve(Options{Threads: 2, CacheDir: dir, Probe: fakeProbe(190, &calls, &again), Logger: slog.New(slog.DiscardHandler)})
	if !(again < first) || again > 100*time.Millisecond {
		t.Errorf("probing time: %v with nothing cached, %v with a cached peak; want the check shorter and <= 100ms", first, again)
	}
}

func TestRecordRaisesOnly(t *testing.T) {
	path := CachePath(filepath.Join(t.TempDir(), "sub")) // the directory is created
	key := CurrentKey(2)
	for i, tc := range []struct {
		gflops  float64
		replace bool
		stored  bool
		after   float64
	}{
		{200, false, true, 200},
		{190, false, false, 200},
		{200, false, false, 200},
		{229, false, true, 229},
		{150, true, true, 150},
	} {
		e, stored, err := Record(path, key, Entry{GFLOPS: tc.gflops, MeasuredAt: testNow}, tc.replace)
		if err != nil {
			t.Fatal(err)
		}
		c, err := Load(path)
		if err != nil {
			t.Fatal(err)
		}
		if stored != tc.stored || e.GFLOPS != tc.after || c.Peaks[key.String()].GFLOPS != tc.after {
			t.Errorf("%d: Record(%v, replace %v) = %v stored %v, file %v; want %v stored %v", i, tc.gflops, tc.replace,
				e.GFLOPS, stored, c.Peaks[key.String()].GFLOPS, tc.after, tc.stored)
		}
	}
	for _, bad := range []float64{0, -1} {
		if _, _, err := Record(path, key, Entry{GFLOPS: bad}, true); err == nil {
			t.Errorf("Record(%v) succeeded", bad)
		}
	}
}

func TestCorruptCacheIsReplaced(t *testing.T) {
	for name, content := range map[string]string{
		"not json":      "{\"version\": 1, \"peaks\": {",
		"wrong version": `{"version": 99, "peaks": {}}`,
		"zero peak":     `{"version": 1, "peaks": {"x": {"gflops": 0}}}`,
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			path := CachePath(dir)
			if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := Load(path); err == nil || !strings.Contains(err.Error(), path) {
				t.Fatalf("Load of a corrupt file: err %v, want one naming %s", err, path)
			}
			var logs bytes.Buffer
			calls, spent := 0, time.Duration(0)
			p := Resolve(Options{Threads: 2, CacheDir: dir, Probe: fakeProbe(210, &calls, &spent), Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			if p.Source != Probed || p.GFLOPS != 210 {
				t.Errorf("Resolve = %v from %q, want 210 probed", p.GFLOPS, p.Source)
			}
			if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), path) {
				t.Errorf("no warning naming %s: %q", path, logs.String())
			}
			c, err := Load(path)
			if err != nil || c.Peaks[CurrentKey(2).String()].GFLOPS != 210 {
				t.Errorf("cache not replaced: %+v, %v", c, err)
			}
		})
	}
}

func TestUnwritableCacheStillResolves(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(dir, nil, 0o644); err != nil { // a file where the directory should be
		t.Fatal(err)
	}
	var logs bytes.Buffer
	calls, spent := 0, time.Duration(0)
	p := Resolve(Options{Threads: 1, CacheDir: dir, Probe: fakeProbe(100, &calls, &spent), Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if p.Source != Probed || p.GFLOPS != 100 || !strings.Contains(logs.String(), "could not cache") {
		t.Errorf("Resolve = %+v, log %q", p, logs.String())
	}
}

func TestKeyDiffersByThreads(t *testing.T) {
	k1, k2 := CurrentKey(1), CurrentKey(2)
	if k1.String() == k2.String() {
		t.Fatalf("keys for 1 and 2 threads are equal: %q", k1)
	}
	if k1.CPU == "" || k1.Impl == "" || !strings.Contains(k1.String(), k1.CPU) || !strings.Contains(k1.String(), k1.Impl) {
		t.Errorf("key %q lacks the CPU model or the GEMM implementation", k1)
	}
	if CurrentKey(0) != k1 {
		t.Errorf("CurrentKey(0) = %v, want the 1-thread key", CurrentKey(0))
	}
}

func TestDir(t *testing.T) {
	t.Setenv(EnvCacheDir, "/some/where")
	if d, err := Dir(); err != nil || d != "/some/where" {
		t.Errorf("Dir() = %q, %v with %s set", d, err, EnvCacheDir)
	}
	t.Setenv(EnvCacheDir, "")
	t.Setenv("XDG_CACHE_HOME", "/xdg")
	t.Setenv("HOME", "/home/x")
	if d, err := Dir(); err != nil || d != "/xdg/kestrel" {
		t.Errorf("Dir() = %q, %v; want /xdg/kestrel", d, err)
	}
}

func TestBench(t *testing.T) {
	dir := t.TempDir()
	seq := []float64{180, 231, 220, 90}
	i := 0
	probe := func(threads int, each time.Duration) float64 { v := seq[i%len(seq)]; i++; return v }
	o := BenchOptions{Threads: 2, Duration: 40 * time.Millisecond, Each: 10 * time.Millisecond, CacheDir: dir, Probe: probe,
		Now: func() time.Time { return testNow }}
	r, err := Bench(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Probes) != 4 || r.GFLOPS != 231 || r.Min != 90 || r.Median != 220 || !r.Stored || r.Previous != nil || r.Cached.GFLOPS != 231 {
		t.Fatalf("Bench = %+v", r)
	}
	seq = []float64{200}
	r, err = Bench(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if r.Stored || r.Previous == nil || r.Previous.GFLOPS != 231 || r.Cached.GFLOPS != 231 {
		t.Errorf("a lower measurement replaced the cache: %+v", r)
	}
	o.Replace = true
	if r, err = Bench(context.Background(), o); err != nil || !r.Stored || r.Cached.GFLOPS != 200 {
		t.Errorf("--replace: %+v, %v", r, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Bench(ctx, o); err == nil {
		t.Error("Bench with a cancelled context succeeded")
	}
}

// TestMaxProbe runs the real probe briefly: it must read a positive rate.
func TestMaxProbe(t *testing.T) {
	if g := MaxProbe(1, 2, 5*time.Millisecond); !(g > 0) {
		t.Errorf("MaxProbe = %v", g)
	}
}

// TestBenchBF16Key: the bf16 peak is cached under its own key (BF16Key),
// beside the FMA peak, never over it; an unknown dtype is an error.
func TestBenchBF16Key(t *testing.T) {
	dir := t.TempDir()
	val := 300.0
	probe := func(int, time.Duration) float64 { return val }
	o := BenchOptions{Threads: 1, Duration: 10 * time.Millisecond, Each: 10 * time.Millisecond, CacheDir: dir, Probe: probe,
		Now: func() time.Time { return testNow }}
	if _, err := Bench(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	val, o.DType = 150, "bf16"
	r, err := Bench(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if r.Key != BF16Key(1) || r.Key == CurrentKey(1) || !r.Stored || r.Previous != nil || r.Cached.GFLOPS != 150 {
		t.Fatalf("bf16 bench = key %v stored %v previous %v cached %v; want its own key, stored fresh", r.Key, r.Stored, r.Previous, r.Cached)
	}
	c, err := Load(CachePath(dir))
	if err != nil {
		t.Fatal(err)
	}
	if fp, bf := c.Peaks[CurrentKey(1).String()].GFLOPS, c.Peaks[BF16Key(1).String()].GFLOPS; fp != 300 || bf != 150 {
		t.Errorf("cache holds fp32 %v and bf16 %v, want 300 and 150", fp, bf)
	}
	o.DType = "fp8"
	if _, err := Bench(context.Background(), o); err == nil {
		t.Error("dtype fp8 accepted")
	}
}
