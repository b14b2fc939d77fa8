// Package runlog reads a run's metrics.jsonl — one JSON object per line, as
// kestrel train and most trainers write them — or its metrics.sqlite store
// into columns, incrementally, so the dashboard can follow a live run and the
// report can plot a finished one. Nested objects and arrays are flattened into slash-joined names.
package runlog

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
)

// Field names that hold each x-axis, in order of preference.
var (
	StepFields  = []string{"step", "steps_seen"}
	TokenFields = []string{"tokens_seen", "tokens"}
	TimeFields  = []string{"wall_time", "elapsed_s", "elapsed", "time", "unix_time"}
	nonMetric   = map[string]bool{"step": true, "steps_seen": true, "tokens_seen": true, "tokens": true, "wall_time": true, "elapsed_s": true, "elapsed": true, "time": true, "unix_time": true, "timestamp": true}
)

const maxLineBytes = 16 << 20

// Log is the columnar contents of a metrics.jsonl. Every line is a row; a
// metric missing from a row is NaN in its column. It is not safe for
// concurrent use; callers lock around Refresh and reads.
type Log struct {
	Path string

	Rows               int
	Step, Tokens, Time []float64 // per row; NaN when the line lacks it; Time starts at 0
	// Superseded marks rows a resumed run replaced: after a resume the log
	// repeats the steps after the checkpoint, and the new rows win.
	Superseded []bool
	BadLines   int    // lines that did not parse (skipped)
	FirstBad   string // file:line: error of the first one

	// OnRecord, when set, sees every parsed line with its row's axes.
	OnRecord func(rec *Record, step, tokens, time float64)
	// OnReset, when set, is called when the file shrank and is read again
	// from the start (everything derived from earlier records is stale).
	OnReset func()

	cols    map[string][]float32
	rec     *Record
	offset  int64 // bytes read (JSONL) or the last rowid read (store)
	lineNo  int
	t0      float64
	hasT0   bool
	maxStep float64
}

// New returns an empty log of the file at path; call Refresh to read it.
func New(path string) *Log {
	return &Log{Path: path, cols: map[string][]float32{}, rec: NewRecord()}
}

// Load reads the whole file at path.
func Load(path string) (*Log, error) {
	l := New(path)
	if err := l.Refresh(); err != nil {
		return nil, err
	}
	return l, nil
}

// Refresh reads the lines appended since the last call. A half-written last
// line is left for the next call; a file that shrank (rewritten) is read
// again from the start. A missing file is not an error: the log stays empty.
func (l *Log) Refresh() error {
	if IsSQLite(l.Path) {
		return l.refreshSQLite()
	}
	st, err := os.Stat(l.Path)
	if err != nil {
		if os.IsNotExist(err) {
			return nil
		}
		return fmt.Errorf("metrics: %w", err)
	}
	if st.Size() < l.offset {
		l.reset()
	}
	if st.Size() == l.offset {
		return nil
	}
	f, err := os.Open(l.Path)
	if err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	defer f.Close()
	if _, err := f.Seek(l.offset, io.SeekStart); err != nil {
		return fmt.Errorf("metrics %s: %w", l.Path, err)
	}
	br := bufio.NewReaderSize(f, 1<<20)
	for {
		line, n, err := readLine(br, maxLineBytes)
		if err != nil && err != io.EOF && err != errLineTooLong {
			return fmt.Errorf("metrics %s: %w", l.Path, err)
		}
		if err == io.EOF {
			return nil // no line or an incomplete last one: the writer is mid-append
		}
		l.offset += n
		l.lineNo++
		perr := err
		body := bytes.TrimSpace(line)
		if perr == nil && len(body) == 0 {
			continue
		}
		if perr == nil {
			perr = ParseLine(body, l.rec)
		}
		if perr != nil {
			l.BadLines++
			if l.FirstBad == "" {
				l.FirstBad = fmt.Sprintf("%s:%d: %v", l.Path, l.lineNo, perr)
			}
			continue
		}
		l.Add(l.rec)
	}
}

// errLineTooLong is readLine's report of a line over its bound.
var errLineTooLong = fmt.Errorf("line over %d bytes", maxLineBytes)

// readLine reads one complete line (with its newline) from br and the
// bytes it took. A line longer than limit is skipped to its newline and
// reported as errLineTooLong (its bytes counted in n, its contents not
// returned); io.EOF means no complete line is there yet (nothing consumed
// counts: the caller re-reads from its offset).
func readLine(br *bufio.Reader, limit int) (line []byte, n int64, err error) {
	line, err = br.ReadSlice('\n')
	n = int64(len(line))
	if err == bufio.ErrBufferFull {
		buf := append([]byte(nil), line...)
		for err == bufio.ErrBufferFull {
			line, err = br.ReadSlice('\n')
			n += int64(len(line))
			if buf != nil && len(buf)+len(line) > limit {
				buf = nil // over the bound: skip to the newline, keep nothing
			} else if buf != nil {
				buf = append(buf, line...)
			}
		}
		if err == nil && buf == nil {
			return nil, n, errLineTooLong
		}
		line = buf
	}
	if err != nil {
		return nil, 0, err
	}
	return line, n, nil
}

// reset forgets everything read: the file shrank or the store was recreated.
func (l *Log) reset() {
	onRecord, onReset := l.OnRecord, l.OnReset
	*l = *New(l.Path)
	l.OnRecord, l.OnReset = onRecord, onReset
	if onReset != nil {
		onReset()
	}
}

func first(rec *Record, names []string) (float64, bool) {
	for _, n := range names {
		if v, ok := rec.Num(n); ok {
			return v, true
		}
	}
	return math.NaN(), false
}

// Add appends one parsed line as a row.
func (l *Log) Add(rec *Record) {
	step, _ := first(rec, StepFields)
	tokens, _ := first(rec, TokenFields)
	wall, ok := first(rec, TimeFields)
	if ok && !l.hasT0 {
		l.t0, l.hasT0 = wall, true
	}
	if ok {
		wall -= l.t0
	}
	row := l.Rows
	l.Rows++
	if row > 0 && step < l.maxStep {
		for i := row - 1; i >= 0; i-- {
			if l.Step[i] >= step {
				l.Superseded[i] = true
			} else if !l.Superseded[i] {
				break
			}
		}
	}
	if !math.IsNaN(step) {
		l.maxStep = step
	}
	l.Superseded = append(l.Superseded, false)
	l.Step = append(l.Step, step)
	l.Tokens = append(l.Tokens, tokens)
	l.Time = append(l.Time, wall)
	rec.Each(func(name string, v float64) {
		if nonMetric[name] {
			return
		}
		col, ok := l.cols[name]
		if !ok {
			col = make([]float32, row, max(row+1, cap(l.Step)))
			for i := range col {
				col[i] = float32(math.NaN())
			}
		}
		for len(col) < row {
			col = append(col, float32(math.NaN()))
		}
		l.cols[name] = append(col, float32(v))
	})
	if l.OnRecord != nil {
		l.OnRecord(rec, step, tokens, wall)
	}
}

// Has reports whether any row recorded name.
func (l *Log) Has(name string) bool { _, ok := l.cols[name]; return ok }

// Column returns the values of name, one per row (NaN where missing), or
// nil when no row has it.
func (l *Log) Column(name string) []float32 {
	col, ok := l.cols[name]
	if !ok {
		return nil
	}
	for len(col) < l.Rows {
		col = append(col, float32(math.NaN()))
	}
	l.cols[name] = col
	return col
}

// Names returns the metric names of the log, sorted.
func (l *Log) Names() []string {
	out := make([]string, 0, len(l.cols))
	for n := range l.cols {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Axis returns the x values of every row for "step", "tokens" or "time".
func (l *Log) Axis(name string) ([]float64, error) {
	switch name {
	case "", "step":
		return l.Step, nil
	case "tokens":
		return l.Tokens, nil
	case "time":
		return l.Time, nil
	}
	return nil, fmt.Errorf("x must be step, tokens or time, got %q", name)
}

// RowOrder returns the row indices to plot against xs, ordered by x: rows
// without an x value and superseded rows are left out.
func (l *Log) RowOrder(xs []float64) []int {
	idx := make([]int, 0, l.Rows)
	for i := 0; i < l.Rows; i++ {
		if !math.IsNaN(xs[i]) && !l.Superseded[i] {
			idx = append(idx, i)
		}
	}
	if !sort.SliceIsSorted(idx, func(a, b int) bool { return xs[idx[a]] < xs[idx[b]] }) {
		sort.SliceStable(idx, func(a, b int) bool { return xs[idx[a]] < xs[idx[b]] })
	}
	return idx
}

// Series returns the (x, y) points of name against axis x ("step", "tokens"
// or "time"), ordered by x, without missing values or superseded rows.
func (l *Log) Series(name, x string) (xs []float64, ys []float64, err error) {
	ax, err := l.Axis(x)
	if err != nil {
		return nil, nil, err
	}
	col := l.Column(name)
	if col == nil {
		return nil, nil, nil
	}
	for _, i := range l.RowOrder(ax) {
		if v := col[i]; !math.IsNaN(float64(v)) {
			xs = append(xs, ax[i])
			ys = append(ys, float64(v))
		}
	}
	return xs, ys, nil
}

// Last returns the last recorded (non-superseded) value of name and its step.
func (l *Log) Last(name string) (value, step float64, ok bool) {
	col := l.Column(name)
	for i := l.Rows - 1; i >= 0; i-- {
		if col != nil && !l.Superseded[i] && !math.IsNaN(float64(col[i])) {
			return float64(col[i]), l.Step[i], true
		}
	}
	return math.NaN(), math.NaN(), false
}
