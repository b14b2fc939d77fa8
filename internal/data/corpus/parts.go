package corpus

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"

	"github.com/kestrel-lm/kestrel/internal/data/document"
)

// Part is a piece of an input for a reader that several processes share:
// the whole input (Whole) or the byte range [Start, End) of a splittable
// file (Splittable): an uncompressed JSONL file cut at line boundaries, or
// a gzip-compressed WARC/WET file cut at gzip member boundaries. For JSONL,
// FirstLine is the line number of the first line at Start, so that
// document ids (<source>:<file>:<line>) are those a whole-file read gives;
// WARC ids are byte offsets of members and need nothing more.
type Part struct {
	Input     Input
	Whole     bool
	Start     int64
	End       int64
	FirstLine int64
}

// Splittable reports whether an input of this format can be read in byte
// ranges: uncompressed JSONL (a range starts after a newline) and
// gzip-compressed WARC/WET (a range starts at a gzip member, the WARC
// convention of one record per member). Other compressed files, plain
// WARC, text, Parquet and code trees are read whole.
func Splittable(format, path string) bool {
	switch format {
	case "jsonl":
		return compression(path) == ""
	case "warc", "wet":
		return compression(path) == "gzip"
	}
	return false
}

// SplitPoints cuts a splittable file (Splittable) of the given size into
// ranges of about chunk bytes. It returns the boundaries b[0] = 0 < b[1] <
// … < b[n] = size. Each inner boundary is found from the target offset k·chunk
// forward: for JSONL the byte after the end of the line that target is in;
// for .warc.gz the next offset where a gzip member starts that decodes to
// a WARC record header ("WARC/"). A line or member longer than chunk makes
// its range longer. It reads only around the boundaries.
func SplitPoints(format, path string, size, chunk int64) ([]int64, error) {
	if chunk <= 0 {
		return nil, fmt.Errorf("split %s: chunk %d must be > 0", path, chunk)
	}
	if !Splittable(format, path) {
		return nil, fmt.Errorf("split %s: format %q cannot be read in byte ranges", path, format)
	}
	pts := []int64{0}
	if size <= chunk {
		return append(pts, size), nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("split %s: %w", path, err)
	}
	defer f.Close()
	next := nextLineStart
	if format != "jsonl" {
		next = nextWARCMember
	}
	for target := chunk; target < size; target += chunk {
		if target <= pts[len(pts)-1] {
			continue
		}
		at, err := next(f, target)
		if err != nil {
			return nil, fmt.Errorf("split %s: %w", path, err)
		}
		if at < 0 || at >= size {
			break
		}
		pts = append(pts, at)
	}
	return append(pts, size), nil
}

// nextLineStart returns the offset after the first newline at or after
// target-1 (so a line ending exactly at target-1 is cut there), or -1.
func nextLineStart(f *os.File, target int64) (int64, error) {
	br := bufio.NewReaderSize(io.NewSectionReader(f, target-1, 1<<62), 64<<10)
	at := target - 1
	for {
		b, err := br.ReadSlice('\n')
		at += int64(len(b))
		switch {
		case err == nil:
			return at, nil
		case err == bufio.ErrBufferFull:
		case err == io.EOF:
			return -1, nil
		default:
			return 0, fmt.Errorf("at offset %d: %w", at, err)
		}
	}
}

// nextWARCMember returns the offset of the first gzip member at or after
// target whose content starts with "WARC/", or -1.
func nextWARCMember(f *os.File, target int64) (int64, error) {
	for from := target; ; {
		at, err := findGzipMagic(f, from)
		if err != nil || at < 0 {
			return at, err
		}
		zr, err := gzip.NewReader(bufio.NewReader(io.NewSectionReader(f, at, 1<<62)))
		if err == nil {
			zr.Multistream(false)
			var head [5]byte
			if _, err := io.ReadFull(zr, head[:]); err == nil && string(head[:]) == "WARC/" {
				return at, nil
			}
		}
		from = at + 1
	}
}

// CountLines returns the number of newline bytes in [start, end) of path.
func CountLines(path string, start, end int64) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("count lines %s: %w", path, err)
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	var n int64
	for off := start; off < end; {
		m := int64(len(buf))
		if end-off < m {
			m = end - off
		}
		k, err := f.ReadAt(buf[:m], off)
		n += int64(bytes.Count(buf[:k], []byte{'\n'}))
		off += int64(k)
		if err != nil && !(err == io.EOF && off >= end) {
			return 0, fmt.Errorf("count lines %s at offset %d: %w", path, off, err)
		}
		if k == 0 {
			break
		}
	}
	return n, nil
}

// ReadParts streams the documents of parts in order, as Read does for
// whole inputs. A byte range of a file calls OnFile only when it starts
// the file (Start = 0), so that files are counted once over all parts.
func ReadParts(ctx context.Context, parts []Part, opts Options) iter.Seq2[document.Doc, error] {
	opts.defaults()
	return func(yield func(document.Doc, error) bool) {
		if err := opts.Validate(); err != nil {
			yield(document.Doc{}, err)
			return
		}
		r := &reader{ctx: ctx, opts: opts, yield: yield}
		for _, p := range parts {
			if err := ctx.Err(); err != nil {
				yield(document.Doc{}, err)
				return
			}
			var err error
			if p.Whole {
				err = r.readInput(p.Input)
			} else {
				err = r.readRange(p)
			}
			if err != nil {
				if !errors.Is(err, errStop) {
					yield(document.Doc{}, err)
				}
				return
			}
		}
	}
}

// readRange reads the records of one byte range.
func (r *reader) readRange(p Part) error {
	if !Splittable(r.opts.Format, p.Input.Path) {
		return fmt.Errorf("input %s: format %q cannot be read in byte ranges", p.Input.Path, r.opts.Format)
	}
	jsonl := r.opts.Format == "jsonl"
	if p.Start < 0 || p.End < p.Start || (jsonl && p.FirstLine < 1) {
		return fmt.Errorf("input %s: bad range [%d, %d) first line %d", p.Input.Path, p.Start, p.End, p.FirstLine)
	}
	f, err := os.Open(p.Input.Path)
	if err != nil {
		return fmt.Errorf("input %s: %w", p.Input.Path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("input %s: %w", p.Input.Path, err)
	}
	if p.End > st.Size() {
		return fmt.Errorf("input %s: range end %d beyond the file's %d bytes (did it change?)", p.Input.Path, p.End, st.Size())
	}
	if p.Start == 0 && r.opts.OnFile != nil {
		r.opts.OnFile(p.Input.Path, st.Size())
	}
	if !jsonl {
		rel := relName(p.Input, p.Input.Path)
		limit := int64(2*r.opts.MaxDocBytes + 1<<20)
		emit := func(rec *warcRecord) error { return r.handleWARC(p.Input, rel, rec) }
		return r.readGzipWARC(p.Input, f, limit, emit, p.Start, p.End)
	}
	cr := newCounting(io.NewSectionReader(f, p.Start, p.End-p.Start), r.opts.OnBytes)
	return r.jsonlLines(p.Input, cr, cr, p.FirstLine)
}
