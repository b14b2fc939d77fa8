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

	"github.com/klauspost/compress/zstd"
	"github.com/parquet-go/parquet-go"

	"github.com/kestrel-lm/kestrel/internal/data/document"
	"github.com/kestrel-lm/kestrel/internal/datadir"
)

type result struct {
	docs     []document.Doc
	problems []Problem
	skips    map[string]int
	err      error
}

func readAll(t *testing.T, inputs []Input, opts Options) result {
	t.Helper()
	var res result
	res.skips = map[string]int{}
	opts.OnProblem = func(p Problem) { res.problems = append(res.problems, p) }
	opts.OnSkip = func(_, kind string) { res.skips[kind]++ }
	for d, err := range Read(context.Background(), inputs, opts) {
		if err != nil {
			res.err = err
			break
		}
		res.docs = append(res.docs, d)
	}
	return res
}

func shipped(t *testing.T, pattern string) []Input {
	t.Helper()
	root, err := datadir.Root()
	if err != nil {
		t.Fatalf("shipped data: %v", err)
	}
	in, err := Resolve([]string{filepath.Join(root, pattern)})
	if err != nil {
		t.Fatal(err)
	}
	return in
}

func TestShippedReaders(t *testing.T) {
	tests := []struct {
		name        string
		pattern     string
		opts        Options
		minDocs     int
		wantSubstr  string // some document contains this
		wantIDStart string
	}{
		{"gsm8k jsonl", "gsm8k/test.jsonl", Options{Source: "math", Format: "jsonl", TextField: "question"}, 1319, "Janet", "math:test.jsonl:1"},
		{"cc_en_head jsonl", "dolma-testdata/cc_en_head/*.jsonl", Options{Source: "web", Format: "jsonl"}, 20, "", "web:cc_en_head-0091.jsonl:1"},
		{"dolma provided json.gz", "dolma-testdata/provided/documents-000.json.gz", Options{Source: "web", Format: "jsonl"}, 5, "PPAA", "web:documents-000.json.gz:1"},
		{"shakespeare grouped", "tinyshakespeare/input.txt", Options{Source: "books", Format: "text", Split: "blank_lines", GroupBytes: 16384}, 60, "First Citizen", "books:input.txt:1"},
		{"wikitext headings", "wikitext-2/test.txt", Options{Source: "wiki", Format: "text", Split: "heading", Separator: `^ = [^=].* = $`}, 50, "Robert", "wiki:test.txt:"},
		{"dolma warc", "dolma-testdata/warc/*.warc.gz", Options{Source: "web", Format: "warc"}, 10, "", "web:sample-0000.warc.gz:"},
		{"whirlwind warc", "commoncrawl-whirlwind/whirlwind.warc.gz", Options{Source: "web", Format: "warc"}, 1, "", "web:whirlwind.warc.gz:"},
		{"whirlwind wet", "commoncrawl-whirlwind/whirlwind.warc.wet.gz", Options{Source: "web", Format: "wet"}, 1, "Escopete", "web:whirlwind.warc.wet.gz:"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := readAll(t, shipped(t, tc.pattern), tc.opts)
			if res.err != nil {
				t.Fatal(res.err)
			}
			if len(res.docs) < tc.minDocs {
				t.Fatalf("got %d docs, want >= %d (problems %v, skips %v)", len(res.docs), tc.minDocs, res.problems, res.skips)
			}
			ids := map[string]bool{}
			found := tc.wantSubstr == ""
			for _, d := range res.docs {
				if ids[d.ID] {
					t.Fatalf("duplicate id %s", d.ID)
				}
				ids[d.ID] = true
				if strings.TrimSpace(d.Text) == "" {
					t.Fatalf("%s: empty text", d.ID)
				}
				if strings.Contains(d.Text, tc.wantSubstr) {
					found = true
				}
			}
			if !found {
				t.Errorf("no document contains %q", tc.wantSubstr)
			}
			if !strings.HasPrefix(res.docs[0].ID, tc.wantIDStart) {
				t.Errorf("first id %q, want prefix %q", res.docs[0].ID, tc.wantIDStart)
			}
			t.Logf("%d docs, first %s (%d bytes), problems %d, skips %v", len(res.docs), res.docs[0].ID, len(res.docs[0].Text), len(res.problems), res.skips)
			// Same input, same ids: ids are stable.
			again := readAll(t, shipped(t, tc.pattern), tc.opts)
			if len(again.docs) != len(res.docs) || again.docs[len(res.docs)-1].ID != res.docs[len(res.docs)-1].ID {
				t.Errorf("second read differs")
			}
		})
	}
}

func TestWARCResponsesExtracted(t *testing.T) {
	res := readAll(t, shipped(t, "dolma-testdata/warc/sample-0000.warc.gz"), Options{Source: "web", Format: "warc"})
	if res.err != nil {
		t.Fatal(res.err)
	}
	if res.skips["warc_request"] == 0 || res.skips["warc_warcinfo"] == 0 {
		t.Errorf("request/warcinfo records not skipped: %v", res.skips)
	}
	for _, d := range res.docs {
		if strings.Contains(d.Text, "<div") || strings.Contains(d.Text, "<script") {
			t.Errorf("%s: HTML left in text: %.200q", d.ID, d.Text)
		}
		if u, _ := d.Meta["url"].(string); !strings.HasPrefix(u, "http") {
			t.Errorf("%s: url meta %q", d.ID, u)
		}
	}
	// Deferred extraction gives the same texts.
	def := readAll(t, shipped(t, "dolma-testdata/warc/sample-0000.warc.gz"), Options{Source: "web", Format: "warc", DeferHTML: true})
	n := 0
	for _, d := range def.docs {
		if !d.NeedsExtract() {
			t.Fatalf("%s: deferred doc has no pending HTML", d.ID)
		}
		if Extract(&d) == nil {
			if n >= len(res.docs) || res.docs[n].Text != d.Text {
				t.Fatalf("deferred extraction differs at %s", d.ID)
			}
			n++
		}
	}
	if n != len(res.docs) {
		t.Errorf("deferred: %d docs, inline %d", n, len(res.docs))
	}
}

func TestCodeReader(t *testing.T) {
	root := filepath.Join(runtime.GOROOT(), "src", "strings")
	in, err := Resolve([]string{root})
	if err != nil {
		t.Fatal(err)
	}
	res := readAll(t, in, Options{Source: "code", Format: "code", Include: []string{"*.go"}, Exclude: []string{"*_test.go", "testdata"}, MaxFileBytes: 64 << 10})
	if res.err != nil {
		t.Fatal(res.err)
	}
	if len(res.docs) < 5 {
		t.Fatalf("%d docs", len(res.docs))
	}
	for _, d := range res.docs {
		if !strings.HasSuffix(d.ID, ".go") || strings.HasSuffix(d.ID, "_test.go") {
			t.Errorf("unexpected file %s", d.ID)
		}
		if !strings.HasPrefix(d.ID, "code:") || strings.Contains(d.ID, runtime.GOROOT()) {
			t.Errorf("id %s not relative", d.ID)
		}
	}
	if res.skips["file_too_large"] == 0 {
		t.Logf("no file over 64 KiB skipped (skips %v)", res.skips)
	}
}

func writeFile(t *testing.T, dir, name string, data []byte) Input {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return Input{Path: p, Root: dir}
}

func gz(b []byte) []byte {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	w.Write(b)
	w.Close()
	return buf.Bytes()
}

func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	good := `{"text":"a fine document","id":"x1"}` + "\n"
	bad := `{"text": "broken` + "\n"
	invalid := "{\"text\":\"bad \xff\xfe bytes\"}\n"
	empty := `{"text":"   "}` + "\n"
	missing := `{"body":"no text field"}` + "\n"
	huge := `{"text":"` + strings.Repeat("a", 5000) + `"}` + "\n"
	jsonl := good + bad + invalid + empty + missing + huge + good
	full := gz([]byte(jsonl))
	var zbuf bytes.Buffer
	zw, _ := zstd.NewWriter(&zbuf)
	zw.Write([]byte(jsonl))
	zw.Close()

	cases := []struct {
		name      string
		file      string
		data      []byte
		opts      Options
		wantDocs  int
		wantKinds []string
	}{
		{"jsonl mixed", "a.jsonl", []byte(jsonl), Options{Format: "jsonl", MaxDocBytes: 1000}, 3, []string{"bad_json", "invalid_utf8", "empty", "missing_field", "too_large"}},
		{"jsonl utf8 skip", "a.jsonl", []byte(jsonl), Options{Format: "jsonl", MaxDocBytes: 1000, UTF8: "skip"}, 2, []string{"bad_json", "invalid_utf8", "empty", "missing_field", "too_large"}},
		{"jsonl.gz truncated", "a.jsonl.gz", full[:len(full)-30], Options{Format: "jsonl", MaxDocBytes: 1000}, -1, []string{"truncated"}},
		{"jsonl.zst", "a.jsonl.zst", zbuf.Bytes(), Options{Format: "jsonl", MaxDocBytes: 1000}, 3, []string{"bad_json"}},
		{"jsonl.zst truncated", "a.jsonl.zst", zbuf.Bytes()[:zbuf.Len()/2], Options{Format: "jsonl", MaxDocBytes: 1000}, -1, []string{"truncated"}},
		{"text invalid utf8", "a.txt", []byte("hello \xff world\n\nsecond piece\n"), Options{Format: "text", Split: "blank_lines"}, 2, []string{"invalid_utf8"}},
		{"text huge", "a.txt", []byte(strings.Repeat("word ", 400) + "\n\nsmall\n"), Options{Format: "text", Split: "blank_lines", MaxDocBytes: 1000}, 1, []string{"too_large"}},
		{"warc garbage", "a.warc", []byte("this is not a warc file\n"), Options{Format: "warc"}, 0, []string{"bad_record"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := writeFile(t, t.TempDir(), tc.file, tc.data)
			tc.opts.Source = "s"
			res := readAll(t, []Input{in}, tc.opts)
			if res.err != nil {
				t.Fatalf("non-strict read failed: %v", res.err)
			}
			if tc.wantDocs >= 0 && len(res.docs) != tc.wantDocs {
				t.Errorf("docs %d, want %d (problems %v)", len(res.docs), tc.wantDocs, res.problems)
			}
			kinds := map[string]bool{}
			for _, p := range res.problems {
				kinds[p.Kind] = true
				if p.File != in.Path {
					t.Errorf("problem names file %q", p.File)
				}
			}
			for _, k := range tc.wantKinds {
				if !kinds[k] {
					t.Errorf("no %s problem reported: %v", k, res.problems)
				}
			}
			for _, d := range res.docs {
				if !strings.Contains(d.Text, "\uFFFD") && strings.Contains(d.Text, "\xff") {
					t.Errorf("invalid UTF-8 passed through")
				}
			}
			// Strict: the same input is an error naming the file.
			tc.opts.Strict = true
			sres := readAll(t, []Input{in}, tc.opts)
			var pe *ProblemError
			if !errors.As(sres.err, &pe) {
				t.Fatalf("strict: err %v, want *ProblemError", sres.err)
			}
			if !strings.Contains(sres.err.Error(), in.Path) {
				t.Errorf("strict error %q does not name the file", sres.err)
			}
		})
	}
	_ = dir
}

func TestBadInputLineNumbers(t *testing.T) {
	in := writeFile(t, t.TempDir(), "b.jsonl", []byte(`{"text":"ok"}`+"\n"+`{"text":"ok"}`+"\nnot json\n"))
	res := readAll(t, []Input{in}, Options{Source: "s", Format: "jsonl"})
	if len(res.problems) != 1 || res.problems[0].Pos != 3 || res.problems[0].Unit != "line" {
		t.Fatalf("problems %+v, want one at line 3", res.problems)
	}
	if res.docs[1].ID != "s:b.jsonl:2" {
		t.Errorf("id %s", res.docs[1].ID)
	}
}

func TestWARCTruncatedMember(t *testing.T) {
	src, err := datadir.Path("commoncrawl-whirlwind/whirlwind.warc.wet.gz")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	full := readAll(t, []Input{{Path: src}}, Options{Source: "web", Format: "wet"})
	in := writeFile(t, t.TempDir(), "cut.warc.wet.gz", b[:len(b)-100])
	res := readAll(t, []Input{in}, Options{Source: "web", Format: "wet"})
	if res.err != nil {
		t.Fatal(res.err)
	}
	if len(res.problems) != 1 || res.problems[0].Kind != "truncated" || res.problems[0].Unit != "offset" || res.problems[0].Pos <= 0 {
		t.Fatalf("problems %+v", res.problems)
	}
	if len(res.docs) >= len(full.docs) {
		t.Errorf("truncated file gave %d docs, full %d", len(res.docs), len(full.docs))
	}
	t.Logf("full %d docs; truncated: %d docs, %s", len(full.docs), len(res.docs), res.problems[0])
}

func TestParquet(t *testing.T) {
	type row struct {
		ID   string `parquet:"id"`
		Text string `parquet:"text"`
	}
	p := filepath.Join(t.TempDir(), "a.parquet")
	rows := []row{{"a", "first parquet document"}, {"b", ""}, {"c", "third document"}}
	if err := parquet.WriteFile(p, rows); err != nil {
		t.Fatal(err)
	}
	res := readAll(t, []Input{{Path: p}}, Options{Source: "pq", Format: "parquet"})
	if res.err != nil {
		t.Fatal(res.err)
	}
	if len(res.docs) != 2 || res.docs[1].Text != "third document" || res.docs[1].ID != "pq:a.parquet:2" {
		t.Fatalf("docs %+v", res.docs)
	}
	if len(res.problems) != 1 || res.problems[0].Kind != "empty" {
		t.Errorf("problems %+v", res.problems)
	}
	bad := readAll(t, []Input{{Path: p}}, Options{Source: "pq", Format: "parquet", TextField: "body"})
	if len(bad.problems) != 1 || bad.problems[0].Kind != "missing_field" {
		t.Errorf("missing column: %+v", bad.problems)
	}
	junk := writeFile(t, t.TempDir(), "junk.parquet", []byte("PAR1 not really"))
	jr := readAll(t, []Input{junk}, Options{Source: "pq", Format: "parquet"})
	if len(jr.problems) != 1 || jr.problems[0].Kind != "bad_parquet" {
		t.Errorf("junk parquet: %+v %v", jr.problems, jr.err)
	}
}

func TestResolveErrors(t *testing.T) {
	if _, err := Resolve([]string{filepath.Join(t.TempDir(), "*.nothing")}); err == nil || !strings.Contains(err.Error(), "no file matches") {
		t.Errorf("err %v", err)
	}
	if err := (Options{Format: "csv"}).Validate(); err == nil {
		t.Error("format csv accepted")
	}
}

// An uncompressed WARC/WET file reads like its gzip form, with byte offsets.
func TestPlainWARC(t *testing.T) {
	src, err := datadir.Path("commoncrawl-whirlwind/whirlwind.warc.wet.gz")
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var plain bytes.Buffer
	if _, err := plain.ReadFrom(zr); err != nil {
		t.Fatal(err)
	}
	in := writeFile(t, t.TempDir(), "w.warc.wet", plain.Bytes())
	res := readAll(t, []Input{in}, Options{Source: "web", Format: "wet"})
	gzres := readAll(t, []Input{{Path: src}}, Options{Source: "web", Format: "wet"})
	if res.err != nil || len(res.docs) != len(gzres.docs) || len(res.docs) == 0 {
		t.Fatalf("plain: %d docs (err %v), gzip: %d", len(res.docs), res.err, len(gzres.docs))
	}
	if res.docs[0].Text != gzres.docs[0].Text {
		t.Error("plain and gzip texts differ")
	}
	off := res.docs[0].Pos
	if !bytes.HasPrefix(plain.Bytes()[off:], []byte("WARC/1.0")) {
		t.Errorf("offset %d does not point at a record", off)
	}
}

// A compressed input that cannot be decoded at all (empty, not in its
// format, corrupt) is skipped and reported like a truncated one: the read
// goes on with the next file, the problem names the file and the reason,
// and only strict mode makes it an error.
func TestBadCompressedInput(t *testing.T) {
	jsonl := []byte(`{"text":"first document"}` + "\n" + `{"text":"second document"}` + "\n")
	full := gz(jsonl)
	var zbuf bytes.Buffer
	zw, _ := zstd.NewWriter(&zbuf)
	zw.Write(jsonl)
	zw.Close()
	wet := []byte("WARC/1.0\r\nWARC-Type: conversion\r\nContent-Length: 14\r\n\r\na wet document\r\n\r\n")
	cases := []struct {
		name, file, format string
		data               []byte
		kind               string
	}{
		{"0-byte gz", "bad.jsonl.gz", "jsonl", nil, "empty_file"},
		{"non-gzip gz", "bad.jsonl.gz", "jsonl", jsonl, "bad_compression"},
		{"truncated gz", "bad.jsonl.gz", "jsonl", full[:len(full)-30], "truncated"},
		{"0-byte zst", "bad.jsonl.zst", "jsonl", nil, "empty_file"},
		{"bad zst", "bad.jsonl.zst", "jsonl", jsonl, "bad_compression"},
		{"corrupt zst", "bad.jsonl.zst", "jsonl", append(bytes.Clone(zbuf.Bytes()[:8]), bytes.Repeat([]byte{0xa5}, 64)...), "bad_compression"},
		{"text non-gzip gz", "bad.txt.gz", "text", jsonl, "bad_compression"},
		{"text bad zst", "bad.txt.zst", "text", jsonl, "bad_compression"},
		{"0-byte warc.gz", "bad.warc.wet.gz", "wet", nil, "empty_file"},
		{"non-gzip warc.gz", "bad.warc.wet.gz", "wet", wet, "bad_compression"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			bad := writeFile(t, dir, tc.file, tc.data)
			var good Input
			if tc.format == "wet" {
				good = writeFile(t, dir, "good.warc.wet.gz", gz(wet))
			} else {
				good = writeFile(t, dir, "good.jsonl.gz", full)
			}
			opts := Options{Source: "s", Format: tc.format}
			if tc.format == "text" {
				opts.Format, opts.Split = "text", "blank_lines"
				good = writeFile(t, dir, "good.txt.gz", gz([]byte("a text document\n")))
			}
			res := readAll(t, []Input{bad, good}, opts)
			if res.err != nil {
				t.Fatalf("non-strict read aborted: %v", res.err)
			}
			var mine []Problem
			for _, p := range res.problems {
				if p.File == bad.Path {
					mine = append(mine, p)
				}
			}
			if len(mine) != 1 || mine[0].Kind != tc.kind || !mine[0].Fatal || mine[0].Detail == "" {
				t.Fatalf("problems %+v, want one fatal %s naming %s", res.problems, tc.kind, bad.Path)
			}
			goodDocs := 0
			for _, d := range res.docs {
				if d.File == good.Path {
					goodDocs++
				}
			}
			if goodDocs == 0 {
				t.Errorf("the next file was not read (docs %d)", len(res.docs))
			}
			t.Logf("%s", mine[0])
			opts.Strict = true
			sres := readAll(t, []Input{bad, good}, opts)
			var pe *ProblemError
			if !errors.As(sres.err, &pe) || !strings.Contains(sres.err.Error(), bad.Path) || pe.Problem.Kind != tc.kind {
				t.Fatalf("strict: err %v, want a *ProblemError %s naming %s", sres.err, tc.kind, bad.Path)
			}
		})
	}
}

// wetRecord is one WET conversion record holding "document n".
func wetRecord(n int, contentLength int) []byte {
	body := fmt.Sprintf("document %d: some words of plain text", n)
	if contentLength < 0 {
		contentLength = len(body)
	}
	return fmt.Appendf(nil, "WARC/1.0\r\nWARC-Type: conversion\r\nWARC-Target-URI: http://example.com/%d\r\nContent-Length: %d\r\n\r\n%s\r\n\r\n", n, contentLength, body)
}

// Garbage between two WARC records (or gzip members) loses only the
// garbage: the reader resynchronises at the next record (member), keeps
// every real record after it and reports the skipped bytes once, named by
// file and offset.
func TestWARCResync(t *testing.T) {
	const n = 22
	garbage := []byte("HTTP/1.1 200 OK\r\nthis is not a record\r\n\x00\x01\x02 binary junk\r\n")
	long := append(bytes.Repeat([]byte("x"), warcLineMax+100), "\r\n"...) // longer than a line may be
	plain := func(at int, junk []byte, badLen bool) []byte {
		var b []byte
		for i := range n {
			if i == at {
				b = append(b, junk...)
			}
			cl := -1
			if badLen && i == at {
				cl = 10_000 // swallows the records after it
			}
			b = append(b, wetRecord(i, cl)...)
		}
		return b
	}
	members := func(at int, junk []byte, corrupt bool) []byte {
		var b []byte
		for i := range n {
			if i == at {
				b = append(b, junk...)
			}
			m := gz(wetRecord(i, -1))
			if corrupt && i == at {
				for k := 12; k < len(m)-8; k++ {
					m[k] ^= 0x5a // the deflate data, not the header
				}
			}
			b = append(b, m...)
		}
		return b
	}
	oneMember := gz(plain(2, garbage, false))
	cases := []struct {
		name, file string
		data       []byte
		want       int // documents kept
		kind       string
		off        int64 // problem offset, -1 = any
	}{
		{"plain garbage", "a.warc.wet", plain(2, garbage, false), n, "bad_record", int64(len(wetRecord(0, -1)) + len(wetRecord(1, -1)))},
		{"plain garbage before first", "a.warc.wet", plain(0, garbage, false), n, "bad_record", 0},
		{"plain long line", "a.warc.wet", plain(5, long, false), n, "bad_record", -1},
		{"plain content-length too long", "a.warc.wet", plain(2, nil, true), n - 1, "bad_record", -1},
		{"gzip garbage between members", "a.warc.wet.gz", members(2, garbage, false), n, "bad_record", int64(len(gz(wetRecord(0, -1))) + len(gz(wetRecord(1, -1))))},
		{"gzip corrupt member", "a.warc.wet.gz", members(2, nil, true), n - 1, "bad_compression", -1},
		{"gzip one member garbage", "a.warc.wet.gz", oneMember, n, "bad_record", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := writeFile(t, t.TempDir(), tc.file, tc.data)
			res := readAll(t, []Input{in}, Options{Source: "web", Format: "wet"})
			if res.err != nil {
				t.Fatal(res.err)
			}
			seen := map[string]bool{}
			for _, d := range res.docs {
				seen[d.Text] = true
			}
			if len(res.docs) != tc.want || len(seen) != tc.want {
				t.Errorf("kept %d documents (%d distinct), want %d; problems %v", len(res.docs), len(seen), tc.want, res.problems)
			}
			if len(res.problems) != 1 || res.problems[0].Kind != tc.kind || res.problems[0].File != in.Path || res.problems[0].Unit != "offset" ||
				(tc.off >= 0 && res.problems[0].Pos != tc.off) || !strings.Contains(res.problems[0].Detail, "skipped") {
				t.Fatalf("problems %v, want one %s at offset %d naming the bytes skipped", res.problems, tc.kind, tc.off)
			}
			t.Logf("%d docs; %s", len(res.docs), res.problems[0])
			if !strings.HasSuffix(tc.file, ".gz") {
				for _, d := range res.docs {
					if !bytes.HasPrefix(tc.data[d.Pos:], []byte("WARC/1.0")) {
						t.Errorf("%s: offset %d does not point at a record", d.ID, d.Pos)
					}
				}
			}
			sres := readAll(t, []Input{in}, Options{Source: "web", Format: "wet", Strict: true})
			var pe *ProblemError
			if !errors.As(sres.err, &pe) || !strings.Contains(sres.err.Error(), in.Path) {
				t.Fatalf("strict: err %v, want a *ProblemError naming the file", sres.err)
			}
		})
	}
}
