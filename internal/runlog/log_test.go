package runlog

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestResumedRunRepeatsSteps(t *testing.T) {
	l := New("")
	rec := NewRecord()
	for _, line := range []string{`{"step":1,"loss":5}`, `{"step":2,"loss":4}`, `{"step":3,"loss":9}`, `{"step":2,"loss":4.5}`, `{"step":3,"loss":3}`} {
		if err := ParseLine([]byte(line), rec); err != nil {
			t.Fatal(err)
		}
		l.Add(rec)
	}
	idx := l.RowOrder(l.Step)
	if len(idx) != 3 || idx[0] != 0 || idx[1] != 3 || idx[2] != 4 {
		t.Fatalf("rows after resume: %v (want the last row of each step, in step order)", idx)
	}
	xs, ys, err := l.Series("loss", "step")
	if err != nil || len(xs) != 3 || ys[1] != 4.5 || ys[2] != 3 {
		t.Fatalf("series after resume: %v %v %v", xs, ys, err)
	}
	if v, s, ok := l.Last("loss"); !ok || v != 3 || s != 3 {
		t.Fatalf("last: %v %v %v", v, s, ok)
	}
}

func TestRefreshIncremental(t *testing.T) {
	p := filepath.Join(t.TempDir(), "metrics.jsonl")
	if err := os.WriteFile(p, []byte(`{"step":1,"wall_time":100,"a":1}`+"\n"+`{"step":2,"wall_time":101.5,"a":2,"b":7}`+"\n"+`{"step":3,"a"`), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if l.Rows != 2 || l.Time[1] != 1.5 || l.Column("b")[0] == l.Column("b")[0] {
		t.Fatalf("rows %d time %v b %v (b must be NaN in row 0)", l.Rows, l.Time, l.Column("b"))
	}
	f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(":3}\nnot json\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := l.Refresh(); err != nil {
		t.Fatal(err)
	}
	if l.Rows != 3 || l.Column("a")[2] != 3 {
		t.Fatalf("after append: rows %d a %v", l.Rows, l.Column("a"))
	}
	if l.BadLines != 1 || !strings.HasSuffix(strings.SplitN(l.FirstBad, ": ", 2)[0], "metrics.jsonl:4") {
		t.Fatalf("bad line not named: %d %q", l.BadLines, l.FirstBad)
	}
	// A rewritten (shorter) file is read from the start.
	if err := os.WriteFile(p, []byte(`{"step":9,"a":9}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := l.Refresh(); err != nil {
		t.Fatal(err)
	}
	if l.Rows != 1 || l.Step[0] != 9 {
		t.Fatalf("after rewrite: rows %d steps %v", l.Rows, l.Step)
	}
}
