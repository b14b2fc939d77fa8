package runlog

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestIncidentClosures: closures round-trip through the file; a bad line
// is an error naming the file and line; a closure without a reason or
// with steps out of order is refused before it is written.
func TestIncidentClosures(t *testing.T) {
	dir := t.TempDir()
	c := &IncidentClosure{ID: "inc-30", FromStep: 30, ToStep: 34, Time: "2026-11-28T00:00:00Z", Reason: "one bad batch"}
	if err := AppendIncidentClosure(dir, c); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []IncidentClosure{{ID: "inc-1", FromStep: 1, ToStep: 1}, {ID: "inc-5", FromStep: 5, ToStep: 4, Reason: "x"}, {FromStep: 1, ToStep: 1, Reason: "x"}} {
		if err := AppendIncidentClosure(dir, &bad); err == nil {
			t.Errorf("%+v written", bad)
		}
	}
	got, err := ReadIncidentClosures(dir)
	if err != nil || len(got) != 1 || got[0] != *c || !got[0].Covers(32) || got[0].Covers(35) {
		t.Fatalf("read %+v, %v", got, err)
	}
	p := filepath.Join(dir, IncidentClosuresFile)
	f, _ := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"id":"inc-40","from_step":40,"to_step":41,"time":"","reason":"r","seed":7}` + "\n")
	f.Close()
	if _, err := ReadIncidentClosures(dir); err == nil || !strings.Contains(err.Error(), IncidentClosuresFile+":2") {
		t.Errorf("unknown field: %v, want an error naming the file and line 2", err)
	}
}

func FuzzParseIncidentClosures(f *testing.F) {
	f.Add([]byte(`{"id":"inc-30","from_step":30,"to_step":34,"time":"t","reason":"r"}` + "\n"))
	f.Add([]byte("{\n}\n[1,2]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		cs, err := ParseIncidentClosures(data, "f")
		if err != nil {
			return
		}
		for _, c := range cs {
			if c.Validate() != nil {
				t.Fatalf("parsed an invalid closure %+v", c)
			}
		}
	})
}
