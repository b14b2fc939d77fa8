package monitor

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"sort"
	"strconv"
)

// JSONLSink writes every sample as one line of a kestrel metrics.jsonl
// ({"step", "tokens_seen", "wall_time", <metric>: value …}), so that a run
// kestrel watch read from another trainer can be opened in kestrel dash.
// Non-finite values are written as the strings "NaN", "Infinity" and
// "-Infinity". Events and alerts are not written (alerts go to alerts.jsonl).
type JSONLSink struct {
	f    *os.File
	w    *bufio.Writer
	path string
	keys []string
}

// OpenJSONLSink creates (or truncates) path.
func OpenJSONLSink(path string) (*JSONLSink, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("metrics jsonl: %w", err)
	}
	return &JSONLSink{f: f, w: bufio.NewWriterSize(f, 1<<16), path: path}, nil
}

func appendJSONFloat(b []byte, v float64) []byte {
	switch {
	case math.IsNaN(v):
		return append(b, `"NaN"`...)
	case math.IsInf(v, 1):
		return append(b, `"Infinity"`...)
	case math.IsInf(v, -1):
		return append(b, `"-Infinity"`...)
	}
	return strconv.AppendFloat(b, v, 'g', -1, 64)
}

// WriteSample implements Sink.
func (j *JSONLSink) WriteSample(s *Sample) error {
	b := make([]byte, 0, 64+24*len(s.Values))
	b = append(b, `{"step":`...)
	b = strconv.AppendInt(b, s.Step, 10)
	if s.Tokens > 0 {
		b = append(b, `,"tokens_seen":`...)
		b = strconv.AppendInt(b, s.Tokens, 10)
	}
	if !s.Time.IsZero() {
		b = append(b, `,"wall_time":`...)
		b = strconv.AppendFloat(b, float64(s.Time.UnixNano())/1e9, 'f', -1, 64)
	}
	j.keys = j.keys[:0]
	for k := range s.Values {
		j.keys = append(j.keys, k)
	}
	sort.Strings(j.keys)
	for _, k := range j.keys {
		b = append(b, ',')
		b = strconv.AppendQuote(b, k)
		b = append(b, ':')
		b = appendJSONFloat(b, s.Values[k])
	}
	b = append(b, "}\n"...)
	if _, err := j.w.Write(b); err != nil {
		return fmt.Errorf("metrics jsonl %s: %w", j.path, err)
	}
	return nil
}

// WriteEvent implements Sink (events are not part of metrics.jsonl).
func (j *JSONLSink) WriteEvent(*Event) error { return nil }

// WriteAlert implements Sink (alerts go to alerts.jsonl).
func (j *JSONLSink) WriteAlert(*Alert) error { return nil }

// Close flushes and closes the file.
func (j *JSONLSink) Close() error {
	if err := j.w.Flush(); err != nil {
		j.f.Close()
		return fmt.Errorf("metrics jsonl %s: %w", j.path, err)
	}
	return j.f.Close()
}
