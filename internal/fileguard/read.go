package fileguard

import (
	"context"
	"fmt"
	"io"
	"os"
)

// NotRegularError is the refusal of a path that is not a regular file
// where one is expected.
type NotRegularError struct {
	Path string
	Kind string // "named pipe (FIFO)", "character device", "directory" …
}

func (e *NotRegularError) Error() string {
	return fmt.Sprintf("%s is a %s, not a regular file", e.Path, e.Kind)
}

// TooLargeError is the refusal of a file larger than its reader's bound.
type TooLargeError struct {
	Path  string
	Size  int64
	Limit int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s is %d bytes, over the %d-byte limit for this file", e.Path, e.Size, e.Limit)
}

// Open opens path for reading when it is a regular file (links followed).
// A FIFO, device, socket or directory is a *NotRegularError, checked
// before the open, so a FIFO without a writer does not block, and again on
// the open file, so a path swapped in between is caught.
func Open(path string) (*os.File, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, &NotRegularError{Path: path, Kind: kind(st.Mode())}
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	fst, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fst.Mode().IsRegular() || !os.SameFile(st, fst) {
		f.Close()
		return nil, &NotRegularError{Path: path, Kind: kind(fst.Mode()) + " (replaced while opening)"}
	}
	return f, nil
}

// ReadFile reads the regular file path whole. A file over limit bytes is a
// *TooLargeError (limit ≤ 0: no bound); one that grows past the limit
// while being read is refused too.
func ReadFile(path string, limit int64) ([]byte, error) {
	return ReadFileContext(context.Background(), path, limit)
}

// ReadFileContext is ReadFile ending early, with ctx's error, when ctx is
// done.
func ReadFileContext(ctx context.Context, path string, limit int64) ([]byte, error) {
	f, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if limit > 0 && st.Size() > limit {
		return nil, &TooLargeError{Path: path, Size: st.Size(), Limit: limit}
	}
	r := io.Reader(Reader(ctx, f))
	if limit > 0 {
		r = io.LimitReader(r, limit+1)
	}
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if limit > 0 && int64(len(b)) > limit {
		return nil, &TooLargeError{Path: path, Size: int64(len(b)), Limit: limit}
	}
	return b, nil
}

// Reader returns r whose every Read first checks ctx: once ctx is done
// Read returns ctx's error, so a long read ends at Ctrl-C.
func Reader(ctx context.Context, r io.Reader) io.Reader {
	if ctx == nil || ctx.Done() == nil {
		return r
	}
	return ctxReader{ctx: ctx, r: r}
}

type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
