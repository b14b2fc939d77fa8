package main

import (
	"runtime"
	"testing"
)

// initAlloc is what the process allocated before package main's tests
// ran: the package init of everything kestrel links.
var initAlloc = func() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.TotalAlloc
}()

// TestInitIsLight holds package init (paid by every kestrel command before
// its first line, docs/performance.md "Start-up") to a few MB: upstream
// go-dateparser built its ~200 locales in init, 78 MB and ~0.3 s, and its
// timezone regexps, 5 MB and ~10 ms (third_party/README.md); what is left
// is ~5 MB.
func TestInitIsLight(t *testing.T) {
	const limit = 8 << 20
	if initAlloc > limit {
		t.Errorf("package init allocated %d MB (limit %d MB): a linked package builds large tables in init; build them on first use (GODEBUG=inittrace=1 kestrel version names it)", initAlloc>>20, limit>>20)
	}
	t.Logf("package init allocated %.1f MB", float64(initAlloc)/(1<<20))
}
