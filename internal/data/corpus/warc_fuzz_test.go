package corpus

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/kestrel-lm/kestrel/internal/data/document"
)

// fuzzWARC is one WARC record of the given type, header lines and block.
func fuzzWARC(typ, extra, block string) []byte {
	return fmt.Appendf(nil, "WARC/1.0\r\nWARC-Type: %s\r\nWARC-Target-URI: <http://example.com/>\r\n%sContent-Length: %d\r\n\r\n%s\r\n\r\n", typ, extra, len(block), block)
}

// gzipMembers compresses each part as its own gzip member.
func gzipMembers(parts ...[]byte) []byte {
	var b bytes.Buffer
	for _, p := range parts {
		zw := gzip.NewWriter(&b)
		zw.Write(p)
		zw.Close()
	}
	return b.Bytes()
}

// warcRead reads path as WARC, collecting documents and problems.
func warcRead(path string, strict bool) (docs []document.Doc, probs []Problem, err error) {
	opts := Options{Source: "s", Format: "warc", Strict: strict, OnProblem: func(p Problem) { probs = append(probs, p) }}
	for d, e := range Read(context.Background(), []Input{{Path: path, Root: filepath.Dir(path)}}, opts) {
		if e != nil {
			return docs, probs, e
		}
		docs = append(docs, d)
	}
	return docs, probs, nil
}

// FuzzReadWARC: any WARC/WET file, plain or gzip, reads without panicking
// and without an I/O error; every problem names the file and an offset
// inside it (or the whole file, unit "file"); every document is non-blank valid UTF-8 at an offset inside
// the file; strict mode stops at the first problem with a *ProblemError
// naming it; and the documents written back as WET conversion records
// read back as the same texts with no problem (parse → write → parse).
func FuzzReadWARC(f *testing.F) {
	wet := append(fuzzWARC("conversion", "", "first document"), fuzzWARC("conversion", "WARC-Identified-Content-Language: eng\r\n", "second\r\ndocument")...)
	html := fuzzWARC("response", "", "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n<html><body><article><p>"+strings.Repeat("Main content of a page. ", 20)+"</p></article></body></html>")
	f.Add(wet, false)
	f.Add(append(append([]byte("junk\r\n"), wet...), "WARC/1.0\r\nContent-Length: 99\r\n\r\nshort"...), false)
	f.Add(html, false)
	f.Add(fuzzWARC("request", "", "GET / HTTP/1.1\r\n\r\n"), false)
	f.Add(gzipMembers(fuzzWARC("conversion", "", "zipped"), []byte("not a member"), fuzzWARC("conversion", "", "again")), true)
	f.Add(gzipMembers(wet)[:30], true)
	f.Fuzz(func(t *testing.T, data []byte, gz bool) {
		name := "in.warc"
		if gz {
			name += ".gz"
		}
		path := filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		docs, probs, err := warcRead(path, false)
		if err != nil {
			t.Fatalf("lenient read: %v", err)
		}
		for _, p := range probs {
			if p.File != path || p.Unit != "offset" && (p.Unit != "file" || p.Pos != 0) || p.Pos < 0 || p.Pos > int64(len(data)) {
				t.Fatalf("problem %s: not at an offset of %s (%d bytes)", p, path, len(data))
			}
		}
		var texts []string
		for _, d := range docs {
			if d.File != path || d.Pos < 0 || d.Pos >= int64(len(data)) || !strings.HasPrefix(d.ID, "s:") {
				t.Fatalf("document %s at %s:%d", d.ID, d.File, d.Pos)
			}
			if !utf8.ValidString(d.Text) || strings.TrimSpace(d.Text) == "" {
				t.Fatalf("document %s: text %q", d.ID, d.Text)
			}
			texts = append(texts, d.Text)
		}
		if len(probs) > 0 {
			_, _, err := warcRead(path, true)
			var pe *ProblemError
			if !errors.As(err, &pe) || pe.Problem != probs[0] {
				t.Fatalf("strict: %v; want the first problem %s", err, probs[0])
			}
		}
		checkWETRoundTrip(t, texts)
	})
}

// checkWETRoundTrip writes texts as WET conversion records and checks
// they read back unchanged.
func checkWETRoundTrip(t *testing.T, texts []string) {
	var out []byte
	for _, s := range texts {
		out = append(out, fuzzWARC("conversion", "", s)...)
	}
	path := filepath.Join(t.TempDir(), "again.warc")
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
	docs, probs, err := warcRead(path, true)
	if err != nil || len(probs) > 0 || len(docs) != len(texts) {
		t.Fatalf("written back: %d documents of %d, problems %v, %v", len(docs), len(texts), probs, err)
	}
	for i, d := range docs {
		if d.Text != texts[i] {
			t.Fatalf("document %d: %q written, %q read back", i, texts[i], d.Text)
		}
	}
}

// TestWARCGzipBodyBound: an HTTP response whose gzip body inflates past
// max_doc_bytes is a too_large problem that costs about max_doc_bytes of
// memory, not the inflated size (before: the body was inflated whole, a
// 64 KiB record costing 64 MiB and more).
func TestWARCGzipBodyBound(t *testing.T) {
	var body bytes.Buffer
	zw := gzip.NewWriter(&body)
	zw.Write(make([]byte, 64<<20))
	zw.Close()
	rec := fuzzWARC("response", "", "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Encoding: gzip\r\n\r\n"+body.String())
	path := filepath.Join(t.TempDir(), "bomb.warc")
	if err := os.WriteFile(path, rec, 0o644); err != nil {
		t.Fatal(err)
	}
	var probs []Problem
	opts := Options{Source: "s", Format: "warc", MaxDocBytes: 1 << 20, OnProblem: func(p Problem) { probs = append(probs, p) }}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	n := 0
	for _, err := range Read(context.Background(), []Input{{Path: path}}, opts) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	runtime.ReadMemStats(&after)
	if n != 0 || len(probs) != 1 || probs[0].Kind != "too_large" || probs[0].Pos != 0 {
		t.Errorf("%d documents, problems %v; want one too_large at offset 0", n, probs)
	}
	if a := after.TotalAlloc - before.TotalAlloc; a > 16<<20 {
		t.Errorf("%d bytes allocated for a %d-byte record with max_doc_bytes 1 MiB", a, len(rec))
	}
}
