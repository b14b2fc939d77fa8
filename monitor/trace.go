package monitor

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"time"
)

// TraceWriter is the trace.json sink: a Chrome trace-event file (JSON
// array of complete "X" events) of the step phases of a window of steps,
// loadable in Perfetto UI and chrome://tracing. Each step is one slice on
// thread 1 with its phases (data_wait, forward, backward, optimizer, eval,
// checkpoint) nested below it and, for steps the trainer traced, the
// model's ops (category "op": layer3/attention holding layer3/qkv_gemm …)
// below those. Times are integer microseconds since the first traced step,
// and the slices of the thread form a tree: each one lies inside its
// parent, and siblings abut or leave a gap (end ≤ next start), which is
// what Chrome's and Perfetto's trace engines require of "X" events on one
// thread (they drop overlapping ones). Measured times that overlap by
// clock jitter are clamped into that shape.
type TraceWriter struct {
	path        string
	f           *os.File
	w           *bufio.Writer
	from, until int64
	n           int
	t0          time.Time
	lastEnd     int64 // end (µs) of the latest step slice
	steps       int   // step slices written
	err         error
}

type traceEvent struct {
	Name string         `json:"name"`
	Cat  string         `json:"cat,omitempty"`
	Ph   string         `json:"ph"`
	Ts   int64          `json:"ts"`
	Dur  *int64         `json:"dur,omitempty"`
	Pid  int            `json:"pid"`
	Tid  int            `json:"tid"`
	S    string         `json:"s,omitempty"` // scope of an instant event
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
	if err == nil {
		err = t.emit(traceEvent{Name: "thread_name", Ph: "M", Pid: 1, Tid: 1, Args: map[string]any{"name": "train loop"}})
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

// us is x in whole microseconds since the trace's origin (floored, so
// that a ≤ b in time stays a ≤ b in microseconds).
func (t *TraceWriter) us(x time.Time) int64 {
	if t.t0.IsZero() {
		t.t0 = x
	}
	ns := x.Sub(t.t0).Nanoseconds()
	us := ns / 1000
	if ns < 0 && ns%1000 != 0 {
		us--
	}
	return us
}

// slice is one "X" event being laid out.
type slice struct {
	name, cat string
	s, e      int64 // [s, e) in µs
	last      int64 // end of the latest child
}

// clampInto places sl inside par after par's previous child.
func clampInto(sl, par *slice) {
	sl.s = min(max(sl.s, par.s, par.last), par.e)
	sl.e = max(min(sl.e, par.e), sl.s)
	par.last = sl.e
	sl.last = sl.s
}

// layout lays a step out as a tree under root: the phases are root's
// children in start order, each starting at or after the previous one's
// end; each op goes into the phase its start falls in (the last phase
// starting at or before it) and nests in the ops of that phase by time
// (sorted by start, longer first). Every slice is clamped into its parent
// and after its previous sibling. It returns phases then ops, in order.
func layout(root *slice, phases, ops []*slice) []*slice {
	byStart := func(v []*slice) {
		sort.SliceStable(v, func(i, j int) bool {
			if v[i].s != v[j].s {
				return v[i].s < v[j].s
			}
			return v[i].e > v[j].e
		})
	}
	byStart(phases)
	root.last = root.s
	for _, p := range phases {
		clampInto(p, root)
	}
	byStart(ops)
	pi := -1
	var stack []*slice
	for _, op := range ops {
		for pi+1 < len(phases) && (pi < 0 || phases[pi+1].s <= op.s) {
			pi++
			stack = stack[:0]
		}
		if len(stack) == 0 {
			if pi >= 0 {
				stack = append(stack, phases[pi])
			} else {
				stack = append(stack, root)
			}
		}
		for len(stack) > 1 && op.s >= stack[len(stack)-1].e {
			stack = stack[:len(stack)-1]
		}
		clampInto(op, stack[len(stack)-1])
		stack = append(stack, op)
	}
	return append(phases, ops...)
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
	root := &slice{name: fmt.Sprintf("step %d", s.Step), cat: "step", s: t.us(start), e: t.us(end)}
	if t.steps > 0 { // start after the previous step ends
		root.s = max(root.s, t.lastEnd)
	}
	t.steps++
	root.e = max(root.e, root.s)
	mk := func(ps []Phase, cat string) []*slice {
		out := make([]*slice, len(ps))
		for i, p := range ps {
			out[i] = &slice{name: p.Name, cat: cat, s: t.us(p.Start), e: t.us(p.Start.Add(p.Dur))}
		}
		return out
	}
	spans := layout(root, mk(s.Phases, "phase"), mk(s.Ops, "op"))
	t.lastEnd = root.e
	args := map[string]any{"step": s.Step}
	if x, ok := s.Values["train_loss_raw"]; ok && finite(x) {
		args["train_loss_raw"] = x
	}
	t.err = t.emitSlice(root, args)
	for _, sl := range spans {
		if t.err != nil {
			break
		}
		t.err = t.emitSlice(sl, nil)
	}
	if t.err != nil {
		t.err = fmt.Errorf("trace %s: %w", t.path, t.err)
	}
	return t.err
}

func (t *TraceWriter) emitSlice(sl *slice, args map[string]any) error {
	d := sl.e - sl.s
	return t.emit(traceEvent{Name: sl.name, Cat: sl.cat, Ph: "X", Ts: sl.s, Dur: &d, Pid: 1, Tid: 1, Args: args})
}

// WriteEvent is a no-op (checkpoint and eval time arrive as step phases).
func (t *TraceWriter) WriteEvent(*Event) error { return nil }

// WriteAlert marks the alert as an instant event when it falls in the window.
func (t *TraceWriter) WriteAlert(a *Alert) error {
	if a.Step < t.from || a.Step >= t.until || t.err != nil || t.t0.IsZero() || t.f == nil {
		return t.err
	}
	t.err = t.emit(traceEvent{Name: string(a.Severity) + " " + a.Rule, Cat: "alert", Ph: "i", Ts: t.us(a.Time), Pid: 1, Tid: 1, S: "t"})
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
