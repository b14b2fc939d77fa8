package monitor

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"time"
)

// TraceWriter is the trace.json sink: a Chrome trace-event file (JSON
// array of complete "X" events, microsecond timestamps) of the step phases
// of a window of steps, loadable in Perfetto UI and chrome://tracing. Each
// step is one slice on thread 1 with its phases nested below it.
type TraceWriter struct {
	path        string
	f           *os.File
	w           *bufio.Writer
	from, until int64
	n           int
	t0          time.Time
	err         error
}

type traceEvent struct {
	Name string         `json:"name"`
	Cat  string         `json:"cat"`
	Ph   string         `json:"ph"`
	Ts   float64        `json:"ts"`
	Dur  float64        `json:"dur"`
	Pid  int            `json:"pid"`
	Tid  int            `json:"tid"`
	Args map[string]any `json:"args,omitempty"`
}

// NewTraceWriter records steps [from, from+steps) to path. The file is
// created at the first step inside the window, so a resumed run that starts
// past the window leaves an earlier trace.json alone.
func NewTraceWriter(path string, from, steps int64) (*TraceWriter, error) {
	return &TraceWriter{path: path, from: from, until: from + steps}, nil
}

func (t *TraceWriter) open() error {
	f, err := os.Create(t.path)
	if err != nil {
		return fmt.Errorf("trace: %w", err)
	}
	t.f, t.w = f, bufio.NewWriter(f)
	_, err = t.w.WriteString("[\n")
	if err == nil {
		err = t.emit(traceEvent{Name: "process_name", Ph: "M", Pid: 1, Args: map[string]any{"name": "kestrel train"}})
	}
	if err != nil {
		return fmt.Errorf("trace %s: %w", t.path, err)
	}
	return nil
}

func (t *TraceWriter) emit(e traceEvent) error {
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	if t.n > 0 {
		t.w.WriteString(",\n")
	}
	t.n++
	_, err = t.w.Write(b)
	return err
}

func (t *TraceWriter) us(x time.Time) float64 {
	if t.t0.IsZero() {
		t.t0 = x
	}
	return float64(x.Sub(t.t0).Nanoseconds()) / 1e3
}

// WriteSample records the phases of steps inside the window. Without
// phases the step slice spans step_time seconds ending at the sample time.
func (t *TraceWriter) WriteSample(s *Sample) error {
	if s.Step < t.from || s.Step >= t.until || t.err != nil {
		return t.err
	}
	if t.f == nil {
		if t.err = t.open(); t.err != nil {
			return t.err
		}
	}
	start, end := s.Time, s.Time
	if st, ok := s.Values["step_time"]; ok && finite(st) {
		start = s.Time.Add(-time.Duration(st * float64(time.Second)))
	}
	for _, p := range s.Phases {
		if p.Start.Before(start) {
			start = p.Start
		}
		if e := p.Start.Add(p.Dur); e.After(end) {
			end = e
		}
	}
	args := map[string]any{"step": s.Step}
	if x, ok := s.Values["train_loss_raw"]; ok && finite(x) {
		args["train_loss_raw"] = x
	}
	t.err = t.emit(traceEvent{Name: fmt.Sprintf("step %d", s.Step), Cat: "step", Ph: "X", Ts: t.us(start), Dur: float64(end.Sub(start).Nanoseconds()) / 1e3, Pid: 1, Tid: 1, Args: args})
	for _, p := range s.Phases {
		if t.err != nil {
			break
		}
		t.err = t.emit(traceEvent{Name: p.Name, Cat: "phase", Ph: "X", Ts: t.us(p.Start), Dur: float64(p.Dur.Nanoseconds()) / 1e3, Pid: 1, Tid: 1})
	}
	if t.err != nil {
		t.err = fmt.Errorf("trace %s: %w", t.path, t.err)
	}
	return t.err
}

// WriteEvent is a no-op (checkpoint and eval time arrive as step phases).
func (t *TraceWriter) WriteEvent(*Event) error { return nil }

// WriteAlert marks the alert as an instant event when it falls in the window.
func (t *TraceWriter) WriteAlert(a *Alert) error {
	if a.Step < t.from || a.Step >= t.until || t.err != nil || t.t0.IsZero() || t.f == nil {
		return t.err
	}
	t.err = t.emit(traceEvent{Name: string(a.Severity) + " " + a.Rule, Cat: "alert", Ph: "i", Ts: t.us(a.Time), Pid: 1, Tid: 1})
	return t.err
}

// Close terminates the JSON array and closes the file.
func (t *TraceWriter) Close() error {
	if t.f == nil {
		return t.err
	}
	t.w.WriteString("\n]\n")
	err := t.w.Flush()
	if cerr := t.f.Close(); err == nil {
		err = cerr
	}
	if t.err != nil {
		return t.err
	}
	return err
}
