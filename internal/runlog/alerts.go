package runlog

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"time"

	"github.com/kestrel-lm/kestrel/internal/fileguard"
)

// Severity is an alert level: SEV0 pauses the run, SEV1 asks for quick
// containment, SEV2 for investigation.
type Severity string

// The three severities of seed 004.
const (
	SEV0 Severity = "SEV0"
	SEV1 Severity = "SEV1"
	SEV2 Severity = "SEV2"
)

// Action is what a severity asks for: pause (SEV0), contain (SEV1),
// investigate (SEV2).
func (s Severity) Action() string {
	switch s {
	case SEV0:
		return "pause"
	case SEV1:
		return "contain"
	}
	return "investigate"
}

// Alert is one fired rule: a line of alerts.jsonl and a row of the store's
// alerts table.
type Alert struct {
	Time      time.Time
	Step      int64
	Tokens    int64
	Severity  Severity
	Rule      string
	Metric    string
	Value     float64 // the metric's value that fired the rule (NaN: not a number)
	Threshold float64
	Message   string
	Action    string // pause, contain, investigate
	Verdict   string // the spike classifier's verdict, for spike alerts
	Runbook   string
	Evidence  string // incident directory, relative to the run
}

func (a *Alert) fields(w fieldVisitor) {
	w.str("time", a.Time.Format(time.RFC3339Nano))
	w.int("step", a.Step)
	w.int("tokens", a.Tokens)
	w.str("severity", string(a.Severity))
	w.str("rule", a.Rule)
	if a.Metric != "" {
		w.str("metric", a.Metric)
	}
	w.float("value", a.Value)
	w.float("threshold", a.Threshold)
	w.str("message", a.Message)
	w.str("action", a.Action)
	if a.Verdict != "" {
		w.str("verdict", a.Verdict)
	}
	w.str("runbook", a.Runbook)
	if a.Evidence != "" {
		w.str("evidence", a.Evidence)
	}
}

// MarshalJSON encodes the alert as its alerts.jsonl object (webhooks post
// the same body).
func (a Alert) MarshalJSON() ([]byte, error) {
	e := jsonEncoder{}
	a.fields(&e)
	return append(e.b, '}'), nil
}

// UnmarshalJSON decodes an alerts.jsonl object.
func (a *Alert) UnmarshalJSON(b []byte) error {
	rec := NewRecord()
	if err := ParseLine(bytes.TrimSpace(b), rec); err != nil {
		return err
	}
	return a.fromRecord(rec)
}

func (a *Alert) fromRecord(rec *Record) error {
	*a = Alert{Value: math.NaN(), Threshold: math.NaN()}
	str := func(n string) string { s, _ := rec.Str(n); return s }
	if ts := str("time"); ts != "" {
		t, err := time.Parse(time.RFC3339Nano, ts)
		if err != nil {
			return fmt.Errorf("field time: %w", err)
		}
		a.Time = t
	}
	if v, ok := rec.Num("step"); ok {
		a.Step = int64(v)
	}
	if v, ok := rec.Num("tokens"); ok {
		a.Tokens = int64(v)
	}
	if v, ok := rec.Num("value"); ok {
		a.Value = v
	}
	if v, ok := rec.Num("threshold"); ok {
		a.Threshold = v
	}
	a.Severity = Severity(str("severity"))
	switch a.Severity {
	case SEV0, SEV1, SEV2:
	default:
		return fmt.Errorf("field severity: %q is not SEV0, SEV1 or SEV2", a.Severity)
	}
	a.Rule, a.Metric, a.Message, a.Action = str("rule"), str("metric"), str("message"), str("action")
	a.Verdict, a.Runbook, a.Evidence = str("verdict"), str("runbook"), str("evidence")
	if a.Rule == "" {
		return fmt.Errorf("field rule: missing")
	}
	return nil
}

// AppendAlert appends the alerts.jsonl line of a (with its newline).
func AppendAlert(b []byte, a *Alert) []byte { return AppendLine(b, a) }

// ReadAlerts reads every alert of the alerts.jsonl at path. A missing file
// holds no alerts. A line that is not an alert (or is over the line bound)
// is skipped and counted: the good alerts are returned with a
// *SkippedLinesError naming the first bad line and the count (see
// SkippedLines), so one bad line never hides the others. Any other error
// (the file is not a regular file, a read fails) is returned as is.
func ReadAlerts(path string) ([]Alert, error) {
	out, _, err := ReadAlertsFrom(path, 0)
	return out, err
}

// SkippedLinesError reports the alerts.jsonl lines a read skipped: how
// many, and where the first one is and why it is bad. The alerts returned
// beside it are every good line's.
type SkippedLinesError struct {
	Path  string
	Lines int   // bad lines skipped
	First int   // the first bad line's number (from 1)
	Err   error // why the first bad line is bad
}

func (e *SkippedLinesError) Error() string {
	s := fmt.Sprintf("%s:%d: %v", e.Path, e.First, e.Err)
	if e.Lines == 1 {
		return s + " (1 bad line skipped; the other alerts were read)"
	}
	return s + fmt.Sprintf(" (%d bad lines skipped, this the first; the other alerts were read)", e.Lines)
}

func (e *SkippedLinesError) Unwrap() error { return e.Err }

// SkippedLines returns how many bad lines err reports skipped when err is
// (or wraps) a *SkippedLinesError, and 0 otherwise (nil included). A
// caller of ReadAlerts keeps the alerts when it is positive and says so.
func SkippedLines(err error) int {
	var sk *SkippedLinesError
	if errors.As(err, &sk) {
		return sk.Lines
	}
	return 0
}

// ReadAlertsFrom reads the complete lines of alerts.jsonl after byte offset
// off and returns them with the offset after the last complete line (a line
// still being written is left for the next call). When the file is shorter
// than off it was replaced and is read from the start: next < off tells the
// caller to drop what it read before. Bad lines are skipped and counted as
// in ReadAlerts (the *SkippedLinesError counts this call's).
func ReadAlertsFrom(path string, off int64) (alerts []Alert, next int64, err error) {
	next = off
	f, err := fileguard.Open(path) // a regular file only: a FIFO is refused, not waited on
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, 0, nil
		}
		return nil, off, fmt.Errorf("alerts: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, off, fmt.Errorf("alerts: %w", err)
	}
	if st.Size() < off {
		off, next = 0, 0
	}
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		return nil, off, fmt.Errorf("alerts: %s: %w", path, err)
	}
	// Line numbers are counted from the start of the file.
	lineNo := 0
	if off > 0 {
		head := make([]byte, off)
		if _, err := io.ReadFull(io.NewSectionReader(f, 0, off), head); err == nil {
			lineNo = bytes.Count(head, []byte{'\n'})
		}
	}
	var skip *SkippedLinesError
	bad := func(err error) {
		if skip == nil {
			skip = &SkippedLinesError{Path: path, First: lineNo, Err: err}
		}
		skip.Lines++
	}
	br := bufio.NewReaderSize(f, 1<<16)
	rec := NewRecord()
	for {
		line, n, rerr := readLine(br, maxLineBytes)
		if rerr == io.EOF {
			break
		}
		if rerr != nil && rerr != errLineTooLong {
			return alerts, next, fmt.Errorf("alerts: %s: %w", path, rerr)
		}
		next += n
		lineNo++
		if rerr != nil {
			bad(rerr)
			continue
		}
		body := bytes.TrimSpace(line)
		if len(body) == 0 {
			continue
		}
		var a Alert
		if err := ParseLine(body, rec); err != nil {
			bad(err)
			continue
		}
		if err := a.fromRecord(rec); err != nil {
			bad(err)
			continue
		}
		alerts = append(alerts, a)
	}
	if skip != nil {
		return alerts, next, skip
	}
	return alerts, next, nil
}

// Event kinds of the monitor's event stream (and the store's events table).
const (
	EventCheckpoint = "checkpoint" // OK false = save or verification failed
	EventEval       = "eval"       // Values carry val_loss, slice_val_loss/<src>, probes
	EventResume     = "resume"     // Detail: manifest path of the resumed run
	EventNote       = "note"       // anything else worth marking
)

// Event is something that is not a per-step sample: a checkpoint (and
// whether it succeeded), an evaluation, a resume.
type Event struct {
	Kind   string             `json:"kind"`
	Step   int64              `json:"step"`
	Tokens int64              `json:"tokens_seen,omitempty"`
	Time   time.Time          `json:"time"`
	OK     bool               `json:"ok"`
	Path   string             `json:"path,omitempty"`
	Detail string             `json:"detail,omitempty"`
	Values map[string]float64 `json:"values,omitempty"`
}

// marshalValues encodes event values in the one number encoding.
func marshalValues(v map[string]float64) string {
	e := jsonEncoder{}
	visitSorted(&e, v, "")
	if len(e.b) == 0 {
		return "{}"
	}
	return string(append(e.b, '}'))
}

var _ json.Marshaler = Alert{}
