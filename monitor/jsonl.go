package monitor

import (
	"bufio"
	"fmt"
	"os"

	"github.com/kestrel-lm/kestrel/internal/runlog"
)

// JSONLSink writes every sample as one line of a kestrel metrics.jsonl
// ({"step", "tokens_seen", "unix_time", <metric>: value …}, in the run
// directory's one number encoding, internal/runlog), so that a run kestrel
// watch read from another trainer can be opened in kestrel dash. Events and
// alerts are not written (alerts go to alerts.jsonl).
type JSONLSink struct {
	f    *os.File
	w    *bufio.Writer
	path string
	buf  []byte
}

// OpenJSONLSink creates (or truncates) path.
func OpenJSONLSink(path string) (*JSONLSink, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("metrics jsonl: %w", err)
	}
	return &JSONLSink{f: f, w: bufio.NewWriterSize(f, 1<<16), path: path}, nil
}

// WriteSample implements Sink.
func (j *JSONLSink) WriteSample(s *Sample) error {
	j.buf = runlog.AppendSampleLine(j.buf[:0], s.Step, s.Tokens, unix(s.Time), s.Values)
	if _, err := j.w.Write(j.buf); err != nil {
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
