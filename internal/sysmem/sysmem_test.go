package sysmem

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestAvailableMemory reads a fake /proc and /sys: MemAvailable, the
// fallback without it, and cgroup v1 and v2 limits (net of reclaimable
// page cache) when lower.
func TestAvailable(t *testing.T) {
	const gib = 1 << 30
	for _, tc := range []struct {
		name   string
		files  map[string]string
		want   int
		source string
		ok     bool
	}{
		{"meminfo", map[string]string{"proc/meminfo": "MemTotal: 16777216 kB\nMemFree: 1048576 kB\nMemAvailable: 8388608 kB\n"}, 8 * gib, "MemAvailable", true},
		{"old kernel", map[string]string{"proc/meminfo": "MemTotal: 16777216 kB\nMemFree: 1048576 kB\nBuffers: 1048576 kB\nCached: 2097152 kB\n"}, 4 * gib, "MemFree + Buffers + Cached", true},
		{"nothing", map[string]string{}, 0, "", false},
		{"cgroup v2 lower", map[string]string{"proc/meminfo": "MemAvailable: 8388608 kB\n",
			"sys/fs/cgroup/memory.max": fmt.Sprint(4 * gib), "sys/fs/cgroup/memory.current": fmt.Sprint(2 * gib),
			"sys/fs/cgroup/memory.stat": "anon 1\ninactive_file " + fmt.Sprint(gib) + "\n"}, 3 * gib, "cgroup", true},
		{"cgroup v2 unlimited", map[string]string{"proc/meminfo": "MemAvailable: 8388608 kB\n",
			"sys/fs/cgroup/memory.max": "max\n", "sys/fs/cgroup/memory.current": "1000"}, 8 * gib, "MemAvailable", true},
		{"cgroup v1 lower", map[string]string{"proc/meminfo": "MemAvailable: 8388608 kB\n",
			"sys/fs/cgroup/memory/memory.limit_in_bytes": fmt.Sprint(2 * gib), "sys/fs/cgroup/memory/memory.usage_in_bytes": fmt.Sprint(gib)}, gib, "cgroup", true},
		{"cgroup v1 unlimited", map[string]string{"proc/meminfo": "MemAvailable: 8388608 kB\n",
			"sys/fs/cgroup/memory/memory.limit_in_bytes": "9223372036854771712", "sys/fs/cgroup/memory/memory.usage_in_bytes": "5"}, 8 * gib, "MemAvailable", true},
		{"cgroup higher", map[string]string{"proc/meminfo": "MemAvailable: 1048576 kB\n",
			"sys/fs/cgroup/memory.max": fmt.Sprint(4 * gib), "sys/fs/cgroup/memory.current": "0"}, gib, "MemAvailable", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			for p, body := range tc.files {
				os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755)
				if err := os.WriteFile(filepath.Join(root, p), []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got, source, ok := Available(root)
			if got != tc.want || ok != tc.ok || !strings.Contains(source, tc.source) {
				t.Fatalf("got %d %q %v, want %d %q %v", got, source, ok, tc.want, tc.source, tc.ok)
			}
		})
	}
	if runtime.GOOS == "linux" {
		if got, _, ok := Available("/"); !ok || got <= 0 || got == math.MaxInt {
			t.Errorf("this machine: %d, %v", got, ok)
		}
	}
}
