package stepvitals

import (
	"runtime"
	"strings"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/runlog"
)

func TestParseStatm(t *testing.T) {
	for _, tc := range []struct {
		in         string
		rss, file  int64
		wantErrSub string
	}{
		{"1000 250 40 10 0 300 0\n", 250 * 4096, 40 * 4096, ""},
		{"5 7 0", 7 * 4096, 0, ""},
		{"1000 250", 0, 0, "2 fields"},
		{"1000 x 40", 0, 0, "resident field"},
		{"1000 250 -1", 0, 0, "shared field"},
		{"1 9223372036854775807 0", 0, 0, "resident field"},
		{"", 0, 0, "0 fields"},
	} {
		rss, file, err := parseStatm([]byte(tc.in), 4096)
		if tc.wantErrSub != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErrSub) {
				t.Errorf("%q: err %v, want one containing %q", tc.in, err, tc.wantErrSub)
			}
			continue
		}
		if err != nil || rss != tc.rss || file != tc.file {
			t.Errorf("%q: %d, %d, %v; want %d, %d", tc.in, rss, file, err, tc.rss, tc.file)
		}
	}
}

func FuzzParseStatm(f *testing.F) {
	for _, s := range []string{"1000 250 40 10 0 300 0\n", "1 2", "a b c", "9223372036854775807 9223372036854775807 1"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		rss, file, err := parseStatm(b, 4096)
		switch {
		case err != nil && !strings.HasPrefix(err.Error(), "/proc/self/statm: "):
			t.Fatalf("error %q does not name the file", err)
		case err == nil && (rss < 0 || file < 0 || rss%4096 != 0 || file%4096 != 0):
			t.Fatalf("%q: rss %d, file %d: want whole non-negative pages", b, rss, file)
		}
	})
}

// BenchmarkMemSample is the per-step cost of rss_bytes and go_heap_bytes;
// BenchmarkReadMemStats what runtime.ReadMemStats (a stop-the-world)
// would cost instead.
func BenchmarkMemSample(b *testing.B) {
	m := NewMemory()
	defer m.Close()
	var v runlog.StepVitals
	for b.Loop() {
		m.Sample(&v)
	}
	if runtime.GOOS == "linux" && v.RSSBytes == 0 {
		b.Fatal("no rss_bytes")
	}
}

func BenchmarkReadMemStats(b *testing.B) {
	var ms runtime.MemStats
	for b.Loop() {
		runtime.ReadMemStats(&ms)
	}
}
