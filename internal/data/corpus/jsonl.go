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
	br    *bufio.Reader
	n     int64
	cb    func(int64)
	ioErr error // the first error reading the file itself (not io.EOF)
}

func newCounting(r io.Reader, cb func(int64)) *countingReader {
	return &countingReader{br: bufio.NewReaderSize(r, 256<<10), cb: cb}
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.br.Read(p)
	c.add(n)
	c.noteErr(err)
	return n, err
}

func (c *countingReader) ReadByte() (byte, error) {
	b, err := c.br.ReadByte()
	if err == nil {
		c.add(1)
	}
	c.noteErr(err)
	return b, err
}

// seek continues reading f at off (f must be the file c reads).
func (c *countingReader) seek(f *os.File, off int64) error {
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		return err
	}
	c.br.Reset(f)
	c.n = off
	return nil
}

func (c *countingReader) noteErr(err error) {
	if err != nil && err != io.EOF && c.ioErr == nil {
		c.ioErr = err
	}
}

func (c *countingReader) add(n int) {
	old := c.n
	c.n += int64(n)
	if c.cb != nil && c.n>>20 != old>>20 {
		c.cb(c.n)
	}
}

// openDecompressed opens path and undoes .gz or .zst compression by name.
// A compressed file that cannot be decoded from its start (empty, not in
// its format) is reported as a problem that skips the file: then src is
// nil and err is nil, or, in strict mode, the *ProblemError.
func (r *reader) openDecompressed(path string) (src io.Reader, cr *countingReader, closeFn func(), err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("input %s: %w", path, err)
	}
	format := compression(path)
	if format == "" {
		cr = newCounting(f, r.opts.OnBytes)
		return cr, cr, func() { f.Close() }, nil
	}
	if st, err := f.Stat(); err != nil {
		f.Close()
		return nil, nil, nil, fmt.Errorf("input %s: %w", path, err)
	} else if st.Size() == 0 {
		f.Close()
		return nil, nil, nil, r.emptyCompressed(path, format)
	}
	cr = newCounting(f, r.opts.OnBytes)
	var zr io.Reader
	var zclose func()
	if format == "gzip" {
		g, e := gzip.NewReader(cr)
		zr, zclose, err = g, func() { g.Close() }, e
	} else {
		z, e := zstd.NewReader(cr, zstd.WithDecoderConcurrency(1))
		zr, zclose, err = z, func() { z.Close() }, e
	}
	if err != nil {
		f.Close()
		return nil, nil, nil, r.decodeFailure(cr, path, 0, "file", format+" header", err)
	}
	return zr, cr, func() { zclose(); f.Close() }, nil
}

// compression is the compression a file's name announces: "gzip" (.gz),
// "zstd" (.zst) or "" (none).
func compression(path string) string {
	switch {
	case strings.HasSuffix(path, ".gz"):
		return "gzip"
	case strings.HasSuffix(path, ".zst"):
		return "zstd"
	}
	return ""
}

// emptyCompressed reports a 0-byte compressed file (no valid gzip or zstd
// stream is empty), which skips it.
func (r *reader) emptyCompressed(path, format string) error {
	return r.problem(Problem{File: path, Unit: "file", Kind: "empty_file", Detail: fmt.Sprintf("0 bytes, not a %s stream", format), Fatal: true})
}

// decodeFailure handles an error met while decoding a compressed file at
// pos: a failure to read the file itself is returned as an error (the run
// cannot go on reliably); a decoding failure is the problem "truncated"
// (the stream ends early) or "bad_compression" (not in its format, corrupt)
// that skips the rest of the file.
func (r *reader) decodeFailure(cr *countingReader, path string, pos int64, unit, what string, err error) error {
	if cr.ioErr != nil {
		return fmt.Errorf("input %s: %w", path, cr.ioErr)
	}
	kind := "bad_compression"
	if errors.Is(err, io.ErrUnexpectedEOF) {
		kind = "truncated"
	}
	return r.problem(Problem{File: path, Pos: pos, Unit: unit, Kind: kind, Detail: fmt.Sprintf("%s: %v", what, err), Fatal: true})
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

func (r *reader) readJSONL(in Input) error {
	src, cr, closeFn, err := r.openDecompressed(in.Path)
	if err != nil || src == nil {
		return err
	}
	defer closeFn()
	return r.jsonlLines(in, src, cr, 1)
}

// jsonlLines reads JSONL records from src, numbering lines from firstLine
// (ReadParts starts a byte range of a file at its line number).
func (r *reader) jsonlLines(in Input, src io.Reader, cr *countingReader, firstLine int64) error {
	rel := relName(in, in.Path)
	br := bufio.NewReaderSize(src, 1<<20)
	limit := 2*r.opts.MaxDocBytes + 64<<10
	var buf []byte
	for lineNo := firstLine; ; lineNo++ {
		line, tooLong, err := readLine(br, buf, limit)
		buf = line[:0]
		if err == io.EOF {
			return nil
		}
		if err != nil {
			if compression(in.Path) != "" && cr.ioErr == nil {
				return r.decodeFailure(cr, in.Path, lineNo, "line", compression(in.Path), err)
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
