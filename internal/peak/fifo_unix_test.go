//go:build unix

package peak

import (
	"bytes"
	"log/slog"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestCacheNotRegular: a peak.json that is a FIFO (no writer) or over the
// read bound is a corrupt cache, reported naming the file, never waited on:
// the start-up goes on with a probe and replaces it with a regular file.
func TestCacheNotRegular(t *testing.T) {
	for _, tc := range []struct {
		name string
		make func(path string) error
		want string
	}{
		{"fifo", func(path string) error { return syscall.Mkfifo(path, 0o644) }, "not a regular file"},
		{"too large", func(path string) error { return os.WriteFile(path, bytes.Repeat([]byte(" "), maxCacheBytes+1), 0o644) }, "bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := CachePath(dir)
			if err := tc.make(path); err != nil {
				t.Fatal(err)
			}
			type res struct {
				p    Peak
				logs string
			}
			done := make(chan res, 1)
			go func() {
				var logs bytes.Buffer
				calls, spent := 0, time.Duration(0)
				p := Resolve(Options{Threads: 2, CacheDir: dir, Probe: fakeProbe(210, &calls, &spent), Logger: slog.New(slog.NewTextHandler(&logs, nil))})
				done <- res{p, logs.String()}
			}()
			var r res
			select {
			case r = <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("Resolve is blocked on the cache file")
			}
			if r.p.Source != Probed || r.p.GFLOPS != 210 {
				t.Errorf("Resolve = %v from %q, want 210 probed", r.p.GFLOPS, r.p.Source)
			}
			if !strings.Contains(r.logs, "level=WARN") || !strings.Contains(r.logs, path) || !strings.Contains(r.logs, tc.want) {
				t.Errorf("no warning naming %s (%s): %q", path, tc.want, r.logs)
			}
			if st, err := os.Lstat(path); err != nil || !st.Mode().IsRegular() {
				t.Fatalf("cache not replaced by a regular file: %v, %v", st, err)
			}
			c, err := Load(path)
			if err != nil || c.Peaks[CurrentKey(2).String()].GFLOPS != 210 {
				t.Errorf("cache not replaced: %+v, %v", c, err)
			}
		})
	}
}
