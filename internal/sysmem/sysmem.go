// Package sysmem tells how much memory this process can still allocate:
// /proc/meminfo lowered to a cgroup's limit less its usage (Linux).
package sysmem

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Available returns how many bytes this process can still allocate
// and where the figure comes from, reading the files under root ("/" in
// use): /proc/meminfo's MemAvailable (MemFree + Buffers + Cached on
// kernels without it), lowered to a cgroup's memory limit less its usage
// net of reclaimable page cache (cgroup v2 memory.max, or v1
// memory/memory.limit_in_bytes, at /sys/fs/cgroup) when that is smaller.
// ok is false when none of these can be read (not Linux).
func Available(root string) (bytes int, source string, ok bool) {
	bytes, source, ok = meminfoAvailable(filepath.Join(root, "proc", "meminfo"))
	cg := filepath.Join(root, "sys", "fs", "cgroup")
	for _, c := range []struct{ limit, usage, stat, inactive string }{
		{"memory.max", "memory.current", "memory.stat", "inactive_file"},
		{"memory/memory.limit_in_bytes", "memory/memory.usage_in_bytes", "memory/memory.stat", "total_inactive_file"},
	} {
		limit, err := readInt(filepath.Join(cg, c.limit))
		if err != nil || limit >= 1<<60 { // "max" or unlimited
			continue
		}
		usage, err := readInt(filepath.Join(cg, c.usage))
		if err != nil {
			continue
		}
		inactive, _ := statField(filepath.Join(cg, c.stat), c.inactive)
		avail := max(limit-max(usage-inactive, 0), 0)
		if !ok || avail < bytes {
			bytes, source, ok = avail, "the cgroup's memory limit ("+filepath.Join("/sys/fs/cgroup", c.limit)+") less its usage", true
		}
		break
	}
	return bytes, source, ok
}

// meminfoAvailable reads MemAvailable from a /proc/meminfo file, else
// MemFree + Buffers + Cached.
func meminfoAvailable(path string) (int, string, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, "", false
	}
	kb := map[string]int{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		name, rest, found := strings.Cut(sc.Text(), ":")
		f := strings.Fields(rest)
		if !found || len(f) == 0 {
			continue
		}
		if v, err := strconv.Atoi(f[0]); err == nil && v >= 0 && v < 1<<50 {
			kb[name] = v
		}
	}
	if v, ok := kb["MemAvailable"]; ok {
		return v << 10, "MemAvailable in /proc/meminfo", true
	}
	free, ok := kb["MemFree"]
	if !ok {
		return 0, "", false
	}
	return (free + kb["Buffers"] + kb["Cached"]) << 10, "MemFree + Buffers + Cached in /proc/meminfo", true
}

// readInt reads a file holding one integer (a cgroup value).
func readInt(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}

// statField reads one "name value" line of a cgroup memory.stat file.
func statField(path, name string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, " "); ok && k == name {
			return strconv.Atoi(strings.TrimSpace(v))
		}
	}
	return 0, fmt.Errorf("%s: no %s", path, name)
}
