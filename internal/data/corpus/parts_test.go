package corpus

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/datadir"
)

// TestReadPartsMatchesRead: a JSONL file cut into byte ranges at line
// boundaries and read range by range gives Read's documents, ids
// (line numbers) and problems, for chunk sizes from one line to the file.
func TestReadPartsMatchesRead(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	for i := 0; i < 60; i++ {
		switch {
		case i%17 == 5:
			b.WriteString("\n") // blank line: no document, still a line
		case i%13 == 7:
			b.WriteString(`{"text": broken` + "\n")
		case i%11 == 3:
			fmt.Fprintf(&b, "{\"text\": \"doc %d %s\"}\r\n", i, strings.Repeat("long ", 40))
		default:
			fmt.Fprintf(&b, "{\"text\": \"doc %d\"}\n", i)
		}
	}
	b.WriteString(`{"text": "last, no newline"}`)
	path := filepath.Join(dir, "a.jsonl")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	in := Input{Path: path, Root: dir}
	type rec struct{ id, text string }
	read := func(parts []Part) ([]rec, []string) {
		var probs []string
		opts := Options{Source: "s", Format: "jsonl", OnProblem: func(p Problem) { probs = append(probs, p.String()) }}
		var out []rec
		var err error
		if parts == nil {
			for d, e := range Read(context.Background(), []Input{in}, opts) {
				if e != nil {
					err = e
					break
				}
				out = append(out, rec{d.ID, d.Text})
			}
		} else {
			for d, e := range ReadParts(context.Background(), parts, opts) {
				if e != nil {
					err = e
					break
				}
				out = append(out, rec{d.ID, d.Text})
			}
		}
		if err != nil {
			t.Fatal(err)
		}
		return out, probs
	}
	want, wantProbs := read(nil)
	if len(want) < 40 || len(wantProbs) == 0 {
		t.Fatalf("fixture: %d docs, %d problems", len(want), len(wantProbs))
	}
	st, _ := os.Stat(path)
	for _, chunk := range []int64{1, 37, 200, 1000, st.Size() - 1, st.Size(), 1 << 20} {
		pts, err := SplitPoints("jsonl", path, st.Size(), chunk)
		if err != nil {
			t.Fatal(err)
		}
		var parts []Part
		line := int64(1)
		for k := 0; k+1 < len(pts); k++ {
			if pts[k] >= pts[k+1] {
				t.Fatalf("chunk %d: boundaries not increasing: %v", chunk, pts)
			}
			parts = append(parts, Part{Input: in, Start: pts[k], End: pts[k+1], FirstLine: line})
			n, err := CountLines(path, pts[k], pts[k+1])
			if err != nil {
				t.Fatal(err)
			}
			line += n
		}
		if chunk < 1000 && len(parts) < 3 {
			t.Errorf("chunk %d: only %d ranges", chunk, len(parts))
		}
		got, probs := read(parts)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("chunk %d (%d ranges): documents differ\n got %v\nwant %v", chunk, len(parts), got, want)
		}
		if fmt.Sprint(probs) != fmt.Sprint(wantProbs) {
			t.Errorf("chunk %d: problems differ\n got %v\nwant %v", chunk, probs, wantProbs)
		}
	}
}

// TestReadPartsErrors: ranges that cannot be read are errors naming the file.
func TestReadPartsErrors(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a.jsonl")
	os.WriteFile(path, []byte("{\"text\": \"x\"}\n"), 0o644)
	gz := filepath.Join(dir, "a.jsonl.gz")
	os.WriteFile(gz, []byte("x"), 0o644)
	cases := []struct {
		name string
		part Part
		want string
	}{
		{"beyond end", Part{Input: Input{Path: path}, Start: 0, End: 99, FirstLine: 1}, "beyond the file"},
		{"compressed", Part{Input: Input{Path: gz}, Start: 0, End: 1, FirstLine: 1}, "cannot be read in byte ranges"},
		{"no first line", Part{Input: Input{Path: path}, Start: 0, End: 5}, "bad range"},
	}
	for _, c := range cases {
		var err error
		for _, e := range ReadParts(context.Background(), []Part{c.part}, Options{Source: "s", Format: "jsonl"}) {
			if e != nil {
				err = e
			}
		}
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), c.part.Input.Path) {
			t.Errorf("%s: %v, want %q naming the file", c.name, err, c.want)
		}
	}
}

// TestReadPartsWARC: a .warc.gz cut at gzip members into byte ranges gives
// Read's documents (ids are member offsets), skips and problems.
func TestReadPartsWARC(t *testing.T) {
	path, err := datadir.Path("dolma-testdata/warc/sample-0000.warc.gz")
	if err != nil {
		t.Fatal(err)
	}
	in := Input{Path: path, Root: filepath.Dir(path)}
	read := func(parts []Part) (docs []string, events []string) {
		opts := Options{Source: "web", Format: "warc", DeferHTML: true,
			OnProblem: func(p Problem) { events = append(events, "problem "+p.String()) },
			OnSkip:    func(_, kind string) { events = append(events, "skip "+kind) },
			OnFile:    func(p string, _ int64) { events = append(events, "file "+p) }}
		if parts == nil {
			parts = []Part{{Input: in, Whole: true}}
		}
		for d, err := range ReadParts(context.Background(), parts, opts) {
			if err != nil {
				t.Fatal(err)
			}
			docs = append(docs, fmt.Sprintf("%s %q %x", d.ID, d.Text, sha256.Sum256(d.HTML)))
		}
		return docs, events
	}
	want, wantEv := read(nil)
	if len(want) < 5 {
		t.Fatalf("only %d documents in %s", len(want), path)
	}
	st, _ := os.Stat(path)
	for _, chunk := range []int64{1 << 10, 16 << 10, 100 << 10, st.Size()} {
		pts, err := SplitPoints("warc", path, st.Size(), chunk)
		if err != nil {
			t.Fatal(err)
		}
		var parts []Part
		for k := 0; k+1 < len(pts); k++ {
			parts = append(parts, Part{Input: in, Start: pts[k], End: pts[k+1]})
		}
		if chunk <= 16<<10 && len(parts) < 4 {
			t.Errorf("chunk %d: only %d ranges", chunk, len(parts))
		}
		got, ev := read(parts)
		if strings.Join(got, "\n") != strings.Join(want, "\n") || strings.Join(ev, "\n") != strings.Join(wantEv, "\n") {
			t.Errorf("chunk %d (%d ranges): %d documents, %d events; want %d, %d", chunk, len(parts), len(got), len(ev), len(want), len(wantEv))
		}
	}
	if _, err := SplitPoints("warc", filepath.Join(filepath.Dir(path), "x.warc"), 10, 1); err == nil {
		t.Error("plain .warc split without an error")
	}
}
