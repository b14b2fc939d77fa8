package corpus

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/klauspost/compress/zstd"

	"github.com/kestrel-lm/kestrel/internal/data/document"
)

// countingReader counts bytes read from the underlying file (progress and
// compressed offsets). It implements io.ByteReader so that compress/flate
// reads through it without adding its own buffering.
type countingReader struct {
	br *bufio.Reader
	n  int64
	cb func(int64)
}

func newCounting(r io.Reader, cb func(int64)) *countingReader {
	return &countingReader{br: bufio.NewReaderSize(r, 256<<10), cb: cb}
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.br.Read(p)
	c.add(n)
	return n, err
}

func (c *countingReader) ReadByte() (byte, error) {
	b, err := c.br.ReadByte()
	if err == nil {
		c.add(1)
	}
	return b, err
}

func (c *countingReader) add(n int) {
	old := c.n
	c.n += int64(n)
	if c.cb != nil && c.n>>20 != old>>20 {
		c.cb(c.n)
	}
}

// openDecompressed opens path and undoes .gz or .zst compression by name.
func (r *reader) openDecompressed(path string) (io.Reader, *countingReader, func(), error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("input %s: %w", path, err)
	}
	cr := newCounting(f, r.opts.OnBytes)
	switch {
	case strings.HasSuffix(path, ".gz"):
		zr, err := gzip.NewReader(cr)
		if err != nil {
			f.Close()
			return nil, nil, nil, fmt.Errorf("input %s: gzip: %w", path, err)
		}
		return zr, cr, func() { zr.Close(); f.Close() }, nil
	case strings.HasSuffix(path, ".zst"):
		zr, err := zstd.NewReader(cr, zstd.WithDecoderConcurrency(1))
		if err != nil {
			f.Close()
			return nil, nil, nil, fmt.Errorf("input %s: zstd: %w", path, err)
		}
		return zr, cr, func() { zr.Close(); f.Close() }, nil
	}
	return cr, cr, func() { f.Close() }, nil
}

// readLine returns the next line without its newline. A line longer than
// limit is consumed and returned as nil with tooLong set.
func readLine(br *bufio.Reader, buf []byte, limit int) (line []byte, tooLong bool, err error) {
	buf = buf[:0]
	for {
		frag, e := br.ReadSlice('\n')
		if !tooLong {
			if len(buf)+len(frag) > limit {
				tooLong = true
				buf = buf[:0]
			} else {
				buf = append(buf, frag...)
			}
		}
		if e == bufio.ErrBufferFull {
			continue
		}
		if e != nil {
			if e == io.EOF && (len(buf) > 0 || tooLong) {
				return trimEOL(buf), tooLong, nil
			}
			return trimEOL(buf), tooLong, e
		}
		return trimEOL(buf), tooLong, nil
	}
}

func trimEOL(b []byte) []byte {
	b = bytes.TrimSuffix(b, []byte("\n"))
	return bytes.TrimSuffix(b, []byte("\r"))
}

func isTruncation(err error) bool {
	return errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, gzip.ErrChecksum) || errors.Is(err, gzip.ErrHeader) ||
		strings.Contains(err.Error(), "corrupt") || strings.Contains(err.Error(), "zstd") || strings.Contains(err.Error(), "flate")
}

func (r *reader) readJSONL(in Input) error {
	src, _, closeFn, err := r.openDecompressed(in.Path)
	if err != nil {
		return err
	}
	defer closeFn()
	rel := relName(in, in.Path)
	br := bufio.NewReaderSize(src, 1<<20)
	limit := 2*r.opts.MaxDocBytes + 64<<10
	var buf []byte
	for lineNo := int64(1); ; lineNo++ {
		line, tooLong, err := readLine(br, buf, limit)
		buf = line[:0]
		if err == io.EOF {
			return nil
		}
		if err != nil {
			if isTruncation(err) {
				return r.problem(Problem{File: in.Path, Pos: lineNo, Unit: "line", Kind: "truncated", Detail: err.Error(), Fatal: true})
			}
			return fmt.Errorf("%s:%d: %w", in.Path, lineNo, err)
		}
		if tooLong {
			if err := r.problem(Problem{File: in.Path, Pos: lineNo, Unit: "line", Kind: "too_large", Detail: fmt.Sprintf("line longer than %d bytes", limit)}); err != nil {
				return err
			}
			continue
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue // blank lines between records are not documents
		}
		var rec map[string]json.RawMessage
		if err := json.Unmarshal(line, &rec); err != nil {
			if err := r.problem(Problem{File: in.Path, Pos: lineNo, Unit: "line", Kind: "bad_json", Detail: err.Error()}); err != nil {
				return err
			}
			continue
		}
		text, ok, valid := textFields(rec, r.opts.TextField)
		if !ok {
			if err := r.problem(Problem{File: in.Path, Pos: lineNo, Unit: "line", Kind: "missing_field", Detail: fmt.Sprintf("no string field %q", r.opts.TextField)}); err != nil {
				return err
			}
			continue
		}
		if !valid {
			// encoding/json already replaced bad bytes with U+FFFD; make that visible.
			text = markInvalid(text)
		}
		meta := map[string]any{}
		if v, ok := rec[r.opts.IDField]; ok {
			var s any
			if json.Unmarshal(v, &s) == nil {
				meta["orig_id"] = s
			}
		}
		for _, f := range r.opts.MetaField {
			if v, ok := rec[f]; ok {
				var s any
				if json.Unmarshal(v, &s) == nil {
					meta[f] = s
				}
			}
		}
		d := document.Doc{ID: docID(r.opts.Source, rel, lineNo), Source: r.opts.Source, Text: text, Meta: meta, File: in.Path, Pos: lineNo}
		if err := r.emit(d, "line"); err != nil {
			return err
		}
	}
}

// textFields joins the string fields named in the comma-separated list
// (e.g. "question,answer") with a blank line. ok is false when none is a
// string; valid is false when a raw field held invalid UTF-8.
func textFields(rec map[string]json.RawMessage, fields string) (text string, ok, valid bool) {
	valid = true
	var parts []string
	for _, f := range strings.Split(fields, ",") {
		raw, has := rec[strings.TrimSpace(f)]
		if !has {
			continue
		}
		var s string
		if json.Unmarshal(raw, &s) != nil {
			continue
		}
		if !validJSONStringUTF8(raw) {
			valid = false
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "\n\n"), len(parts) > 0, valid
}

// validJSONStringUTF8 reports whether the raw JSON string token is valid UTF-8.
func validJSONStringUTF8(raw json.RawMessage) bool { return utf8Valid(raw) }

// markInvalid turns the U+FFFD that encoding/json substitutes for invalid
// bytes back into an invalid byte so that emit's UTF-8 policy (repair or
// skip, always reported) applies to JSON input too.
func markInvalid(s string) string {
	return strings.Replace(s, "\uFFFD", "\xff", 1)
}
