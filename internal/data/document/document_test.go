package document

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestDocJSON pins the kept-document line format: id, source, text and meta
// (left out when empty) in that order; where the document was read from
// and pending HTML never reach the file.
func TestDocJSON(t *testing.T) {
	for _, tc := range []struct {
		doc  Doc
		want string
	}{
		{Doc{ID: "web:a.jsonl:1", Source: "web", Text: "hi <b>", File: "/in/a.jsonl", Pos: 1},
			`{"id":"web:a.jsonl:1","source":"web","text":"hi <b>"}`},
		{Doc{ID: "x", Source: "s", Text: "t", Meta: map[string]any{"url": "u"}, HTML: []byte("<p>")},
			`{"id":"x","source":"s","text":"t","meta":{"url":"u"}}`},
	} {
		var b strings.Builder
		enc := json.NewEncoder(&b) // as prepare writes docs/*.jsonl.zst
		enc.SetEscapeHTML(false)
		if err := enc.Encode(tc.doc); err != nil {
			t.Fatal(err)
		}
		if got := strings.TrimSuffix(b.String(), "\n"); got != tc.want {
			t.Errorf("got %s\nwant %s", got, tc.want)
		}
	}
}

func TestRawLen(t *testing.T) {
	d := Doc{Text: "abc", HTML: []byte("<p>abcdef</p>")}
	if !d.NeedsExtract() || d.RawLen() != 13 {
		t.Fatalf("pending HTML: NeedsExtract %v RawLen %d", d.NeedsExtract(), d.RawLen())
	}
	d.HTML = nil
	if d.NeedsExtract() || d.RawLen() != 3 {
		t.Fatalf("text: NeedsExtract %v RawLen %d", d.NeedsExtract(), d.RawLen())
	}
}
