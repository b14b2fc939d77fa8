package corpus

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"

	"github.com/kestrel-lm/kestrel/internal/data/document"
)

// Part is a piece of an input for a reader that several processes share:
// the whole input (Whole) or the byte range [Start, End) of an
// uncompressed JSONL file, cut at line boundaries. FirstLine is the line
// number of the first line at Start, so that document ids
// (<source>:<file>:<line>) are those a whole-file read gives.
type Part struct {
	Input     Input
	Whole     bool
	Start     int64
	End       int64
	FirstLine int64
}

// Splittable reports whether an input of this format can be read in byte
// ranges: uncompressed JSONL files (a range starts after a newline).
// Compressed files, WARC/WET, text, Parquet and code trees are read whole.
func Splittable(format, path string) bool {
	return format == "jsonl" && compression(path) == ""
}

// SplitPoints cuts a file of the given size into ranges of about chunk
// bytes. It returns the boundaries b[0] = 0 < b[1] < … < b[n] = size; each
// inner boundary is the byte just after a newline, found by reading
// forward from the target offset k·chunk (a line longer than chunk makes
// its range longer). It reads only around the boundaries.
func SplitPoints(path string, size, chunk int64) ([]int64, error) {
	if chunk <= 0 {
		return nil, fmt.Errorf("split %s: chunk %d must be > 0", path, chunk)
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
	br := bufio.NewReaderSize(f, 64<<10)
	for target := chunk; target < size; target += chunk {
		prev := pts[len(pts)-1]
		if target <= prev {
			continue
		}
		// The boundary after target: the first newline at or after target-1
		// ends the line, so a line that ends exactly at target-1 is cut there.
		if _, err := f.Seek(target-1, io.SeekStart); err != nil {
			return nil, fmt.Errorf("split %s: %w", path, err)
		}
		br.Reset(f)
		at := target - 1
		found := false
		for {
			chunkB, err := br.ReadSlice('\n')
			at += int64(len(chunkB))
			if err == nil {
				found = true
				break
			}
			if err == bufio.ErrBufferFull {
				continue
			}
			if err == io.EOF {
				break
			}
			return nil, fmt.Errorf("split %s at offset %d: %w", path, at, err)
		}
		if !found || at >= size {
			break
		}
		pts = append(pts, at)
	}
	return append(pts, size), nil
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

// readRange reads the JSONL records of one byte range.
func (r *reader) readRange(p Part) error {
	if !Splittable(r.opts.Format, p.Input.Path) {
		return fmt.Errorf("input %s: format %q cannot be read in byte ranges", p.Input.Path, r.opts.Format)
	}
	if p.Start < 0 || p.End < p.Start || p.FirstLine < 1 {
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
	cr := newCounting(io.NewSectionReader(f, p.Start, p.End-p.Start), r.opts.OnBytes)
	return r.jsonlLines(p.Input, cr, cr, p.FirstLine)
}
