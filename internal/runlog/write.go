package runlog

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"os"
	"strconv"

	"github.com/kestrel-lm/kestrel/internal/atomicfile"
	"github.com/kestrel-lm/kestrel/internal/fileguard"
)

// The one encoding of numbers in the run directory's JSON files: finite
// floats in their shortest form (exponent only below 1e-6 or from 1e21, as
// encoding/json writes them), integers as integers, and the non-finite
// values as the strings "NaN", "Infinity" and "-Infinity" (which ParseLine,
// Python's json and JavaScript's Number() all read back).

// AppendFloat appends v in the run directory's number encoding.
func AppendFloat(b []byte, v float64) []byte {
	switch {
	case math.IsNaN(v):
		return append(b, `"NaN"`...)
	case math.IsInf(v, 1):
		return append(b, `"Infinity"`...)
	case math.IsInf(v, -1):
		return append(b, `"-Infinity"`...)
	}
	f := byte('f')
	if a := math.Abs(v); a != 0 && (a < 1e-6 || a >= 1e21) {
		f = 'e'
	}
	return strconv.AppendFloat(b, v, f, -1, 64)
}

// jsonEncoder appends a record's fields as one JSON object.
type jsonEncoder struct{ b []byte }

func (e *jsonEncoder) key(n string) {
	if len(e.b) == 0 {
		e.b = append(e.b, '{')
	} else {
		e.b = append(e.b, ',')
	}
	e.b = strconv.AppendQuote(e.b, n)
	e.b = append(e.b, ':')
}

func (e *jsonEncoder) int(n string, v int64) { e.key(n); e.b = strconv.AppendInt(e.b, v, 10) }

func (e *jsonEncoder) float(n string, v float64) { e.key(n); e.b = AppendFloat(e.b, v) }

func (e *jsonEncoder) bool(n string, v bool) { e.key(n); e.b = strconv.AppendBool(e.b, v) }

func (e *jsonEncoder) str(n, v string) { e.key(n); e.b = strconv.AppendQuote(e.b, v) }

// AppendLine appends the metrics.jsonl line of l (with its newline) to b.
func AppendLine(b []byte, l Line) []byte {
	e := jsonEncoder{}
	l.fields(&e)
	if len(e.b) == 0 {
		e.b = append(e.b, '{')
	}
	return append(append(b, e.b...), "}\n"...)
}

// AppendSampleLine appends a metrics.jsonl line for a step read from
// another trainer's log (kestrel watch --jsonl): the axes, then the values
// sorted by name. unixTime is left out when it is 0.
func AppendSampleLine(b []byte, step, tokens int64, unixTime float64, values map[string]float64) []byte {
	e := jsonEncoder{}
	e.int("step", step)
	if tokens > 0 {
		e.int("tokens_seen", tokens)
	}
	if unixTime != 0 {
		e.float("unix_time", unixTime)
	}
	visitSorted(&e, values, "")
	return append(append(b, e.b...), "}\n"...)
}

// MetricsWriter appends records to a metrics.jsonl. Each Write reaches the
// operating system before it returns (a crash loses at most the line being
// written); Sync makes the file durable.
type MetricsWriter struct {
	f   *os.File
	w   *bufio.Writer
	buf []byte
}

// OpenMetrics opens path for appending, creating it if needed.
func OpenMetrics(path string) (*MetricsWriter, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	return &MetricsWriter{f: f, w: bufio.NewWriter(f)}, nil
}

// Write appends one record.
func (m *MetricsWriter) Write(l Line) error {
	m.buf = AppendLine(m.buf[:0], l)
	return m.WriteRaw(m.buf)
}

// WriteRaw appends an already encoded line (it must end in a newline).
func (m *MetricsWriter) WriteRaw(line []byte) error {
	m.w.Write(line)
	if err := m.w.Flush(); err != nil {
		return fmt.Errorf("metrics: %s: %w", m.f.Name(), err)
	}
	return nil
}

// Sync flushes and fsyncs the file.
func (m *MetricsWriter) Sync() error {
	if err := m.w.Flush(); err != nil {
		return fmt.Errorf("metrics: %s: %w", m.f.Name(), err)
	}
	if err := m.f.Sync(); err != nil {
		return fmt.Errorf("metrics: %s: %w", m.f.Name(), err)
	}
	return nil
}

// Close flushes and closes the file.
func (m *MetricsWriter) Close() error {
	if err := m.w.Flush(); err != nil {
		m.f.Close()
		return fmt.Errorf("metrics: %s: %w", m.f.Name(), err)
	}
	return m.f.Close()
}

// TruncateMetrics keeps only the lines of the metrics.jsonl at path whose
// "step" is at most step, and drops a torn last line: a run resumed from
// the checkpoint of that step then reads as one uninterrupted run. Lines
// that do not parse are kept (they are someone's evidence). A missing file
// is not an error. The file is replaced atomically.
func TruncateMetrics(path string, step int) (dropped int, err error) {
	data, err := fileguard.ReadFile(path, 0) // a regular file only
	if os.IsNotExist(err) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("metrics: %w", err)
	}
	var out bytes.Buffer
	rec := NewRecord()
	for _, line := range bytes.SplitAfter(data, []byte{'\n'}) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if line[len(line)-1] != '\n' { // a torn last line from a crash
			dropped++
			continue
		}
		if ParseLine(bytes.TrimSpace(line), rec) == nil {
			if s, ok := rec.Num("step"); ok && s > float64(step) {
				dropped++
				continue
			}
		}
		out.Write(line)
	}
	if dropped == 0 {
		return 0, nil
	}
	if err := atomicfile.WriteFile(path, out.Bytes()); err != nil {
		return dropped, fmt.Errorf("metrics: %w", err)
	}
	return dropped, nil
}
