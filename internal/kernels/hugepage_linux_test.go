package kernels

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"
	"unsafe"
)

// TestMakeBufferAdvisesHugePages reads /proc/self/smaps: the mapping that
// holds a large MakeBuffer carries the MADV_HUGEPAGE flag ("hg" in
// VmFlags), a small one is left alone.
func TestMakeBufferAdvisesHugePages(t *testing.T) {
	if _, err := os.Stat("/sys/kernel/mm/transparent_hugepage/enabled"); err != nil {
		t.Skip("kernel without transparent huge pages: the advice is refused, and MakeBuffer ignores that")
	}
	big := MakeBuffer(8 << 20) // 32 MiB
	small := MakeBuffer(1000)
	if len(big) != 8<<20 || len(small) != 1000 {
		t.Fatalf("lengths %d, %d", len(big), len(small))
	}
	mid := uintptr(unsafe.Pointer(&big[len(big)/2]))
	flags, ok := vmFlagsAt(t, mid)
	if !ok {
		t.Skip("no smaps entry for the buffer (no /proc/self/smaps?)")
	}
	if !strings.Contains(" "+flags+" ", " hg ") {
		t.Errorf("the 32 MiB buffer's mapping has VmFlags %q, want hg (MADV_HUGEPAGE)", flags)
	}
	for _, v := range big[:16] {
		if v != 0 {
			t.Fatal("MakeBuffer is not zeroed")
		}
	}
}

// vmFlagsAt returns the VmFlags line of the /proc/self/smaps mapping
// that contains addr.
func vmFlagsAt(t *testing.T, addr uintptr) (string, bool) {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return "", false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	in := false
	for sc.Scan() {
		line := sc.Text()
		if lo, hi, ok := parseRange(line); ok {
			in = addr >= lo && addr < hi
			continue
		}
		if in {
			if rest, ok := strings.CutPrefix(line, "VmFlags:"); ok {
				return strings.TrimSpace(rest), true
			}
		}
	}
	return "", false
}

// parseRange parses the "lo-hi perms …" header line of a mapping.
func parseRange(line string) (lo, hi uintptr, ok bool) {
	r, _, found := strings.Cut(line, " ")
	if !found {
		return 0, 0, false
	}
	a, b, found := strings.Cut(r, "-")
	if !found {
		return 0, 0, false
	}
	x, err1 := strconv.ParseUint(a, 16, 64)
	y, err2 := strconv.ParseUint(b, 16, 64)
	if err1 != nil || err2 != nil {
		return 0, 0, false
	}
	return uintptr(x), uintptr(y), true
}
