package runlog

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// nested is a metrics line whose value nests depth arrays deep.
func nested(depth int) []byte {
	return []byte(`{"a":` + strings.Repeat("[", depth) + "1" + strings.Repeat("]", depth) + "}")
}

// allocated returns the bytes fn allocates.
func allocated(fn func()) uint64 {
	var a, b runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&a)
	fn()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}

// TestParseLineBounds: a value nested past MaxDepth or a name past
// MaxNameBytes is an error naming the bound, and a hostile line costs
// memory linear in its length (before: a 200 KB nested line allocated
// 19 GB, 0.28 GB at 19 KB).
func TestParseLineBounds(t *testing.T) {
	for _, tc := range []struct {
		name string
		line []byte
		want string // "" = parses
	}{
		{"depth 64", nested(MaxDepth - 1), ""},
		{"depth 65", nested(MaxDepth + 1), "nested deeper than 64 levels"},
		{"200 KB of brackets", nested(100_000), "nested deeper than 64 levels"},
		{"objects 100 deep", []byte(strings.Repeat(`{"k":`, 100) + "1" + strings.Repeat("}", 100)), "nested deeper than 64 levels"},
		{"long name", []byte(`{"` + strings.Repeat("x", MaxNameBytes+1) + `":1}`), "field name over 1024 bytes"},
		{"long nested name", []byte(`{"` + strings.Repeat("x", 600) + `":{"` + strings.Repeat("y", 600) + `":1}}`), "field name over 1024 bytes"},
	} {
		rec := NewRecord()
		var err error
		n := allocated(func() { err = ParseLine(tc.line, rec) })
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: %v; want %q", tc.name, err, tc.want)
		}
		if limit := uint64(64*len(tc.line)) + 1<<20; n > limit {
			t.Errorf("%s: %d bytes allocated for a %d-byte line (limit %d)", tc.name, n, len(tc.line), limit)
		}
	}
}

// TestParseLineInternBounded: a line of many distinct names does not grow
// the record's name cache past its bound.
func TestParseLineInternBounded(t *testing.T) {
	var b bytes.Buffer
	b.WriteString(`{"a":[`)
	for i := range 200_000 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('1')
	}
	b.WriteString("]}")
	rec := NewRecord()
	if err := ParseLine(b.Bytes(), rec); err != nil {
		t.Fatal(err)
	}
	if len(rec.intern) > maxInterned {
		t.Errorf("%d names interned, bound %d", len(rec.intern), maxInterned)
	}
}

// TestLogSkipsHostileLines: a metrics.jsonl with a 200 KB nested line and a
// line over the 16 MiB bound is read to its end: both counted as bad lines
// (the first named by file and line), every other row kept.
func TestLogSkipsHostileLines(t *testing.T) {
	p := filepath.Join(t.TempDir(), "metrics.jsonl")
	var b bytes.Buffer
	fmt.Fprintln(&b, `{"step":1,"train_loss_raw":3}`)
	b.Write(nested(100_000))
	b.WriteByte('\n')
	fmt.Fprintln(&b, `{"step":2,"train_loss_raw":2.5}`)
	b.WriteString(`{"step":3,"pad":"` + strings.Repeat("x", maxLineBytes) + "\"}\n")
	fmt.Fprintln(&b, `{"step":4,"train_loss_raw":2}`)
	if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if l.Rows != 3 || l.BadLines != 2 || !strings.HasPrefix(l.FirstBad, p+":2: ") || !strings.Contains(l.FirstBad, "nested deeper") {
		t.Errorf("rows %d, bad %d (%s); want 3 rows and 2 bad lines, the first at line 2", l.Rows, l.BadLines, l.FirstBad)
	}
	if got := l.Column("train_loss_raw"); len(got) != 3 || got[2] != 2 {
		t.Errorf("train_loss_raw %v", got)
	}
}
