package stepclock

import (
	"strings"
	"testing"
	"time"
)

func TestParseProcStatCPU(t *testing.T) {
	for _, c := range []struct {
		in           string
		steal, total uint64
		err          string
	}{
		{"cpu  10 2 30 400 5 6 7 8 9 10\ncpu0 1 2 3 4 5 6 7 8 0 0\n", 8, 468, ""},
		{"cpu 1 2 3 4 5 6 7 0", 0, 28, ""},
		{"cpu0 1 2 3 4 5 6 7 8\n", 0, 0, "not the aggregate cpu line"},
		{"cpu 1 2 3 4 5 6 7\n", 0, 0, "7 values"},
		{"cpu 1 2 x 4 5 6 7 8\n", 0, 0, "value 3"},
		{"cpu 18446744073709551615 1 0 0 0 0 0 0\n", 0, 0, "overflows"},
		{"", 0, 0, "not the aggregate"},
	} {
		st, tot, err := parseProcStatCPU([]byte(c.in))
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: error %v, want one containing %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || st != c.steal || tot != c.total {
			t.Errorf("%q: %d %d %v, want %d %d", c.in, st, tot, err, c.steal, c.total)
		}
	}
}

func FuzzParseProcStatCPU(f *testing.F) {
	f.Add([]byte("cpu  10 2 30 400 5 6 7 8 9 10\ncpu0 1 2 3 4 5 6 7 8 0 0\n"))
	f.Add([]byte("cpu 1 2 3\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		st, tot, err := parseProcStatCPU(b)
		if err == nil && st > tot {
			t.Fatalf("steal %d above the total %d", st, tot)
		}
	})
}

func TestParseSchedstat(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		ok   bool
	}{{"1234 5678 9\n", 5678, true}, {"1 0 0", 0, true}, {"12", 0, false}, {"", 0, false}, {"1 -3 2", 0, false}, {"1 x 2", 0, false}} {
		got, ok := parseSchedstat([]byte(tc.in))
		if got != tc.want || ok != tc.ok {
			t.Errorf("parseSchedstat(%q) = %d, %v; want %d, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
	var cf counterFiles
	defer cf.close()
	if h := cf.read(); h.delayOK && h.runDelay < 0 {
		t.Errorf("run delay %d ns", h.runDelay)
	}
}

// BenchmarkReadHostCounters is the per-step cost of the contention
// witnesses (/proc/stat, getrusage, every thread's schedstat), read once
// per step line from files kept open (~57 → ~20 µs on the 2-core VM when
// each read opened every file).
func BenchmarkReadHostCounters(b *testing.B) {
	var cf counterFiles
	defer cf.close()
	for b.Loop() {
		cf.read()
	}
}

// TestPauseOnlyOnce: a second Pause keeps the first one's start, and a
// Resume without a Pause leaves the step's span alone.
func TestPauseOnlyOnce(t *testing.T) {
	c := New()
	last := c.last
	c.Resume()
	if c.last != last {
		t.Errorf("Resume without Pause moved the span's start from %v to %v", last, c.last)
	}
	c.Pause()
	at := c.pausedAt
	time.Sleep(time.Millisecond)
	c.Pause()
	if c.pausedAt != at {
		t.Errorf("a second Pause moved its start from %v to %v", at, c.pausedAt)
	}
	c.Resume()
	if !c.last.After(last) {
		t.Errorf("Resume after a pause left the span's start at %v", c.last)
	}
}
