package dashboard

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"
)

// Event is something worth marking on the charts: an alert, a classified
// spike, a skipped or clipped step, a schedule phase change, a batch-size
// change, a data-stage switch, a checkpoint, or a warm-start.
type Event struct {
	Step     float64 `json:"step"`
	Tokens   float64 `json:"tokens"`
	Time     float64 `json:"time"`
	Kind     string  `json:"kind"`               // alert, spike, skipped, clipped, lr_phase, batch_size, data_stage, checkpoint, warm_start
	Severity string  `json:"severity,omitempty"` // SEV0, SEV1, SEV2 for alerts
	Title    string  `json:"title"`
	Detail   string  `json:"detail,omitempty"`
	Runbook  string  `json:"runbook,omitempty"`
	Evidence string  `json:"evidence,omitempty"` // incident directory, relative to the run
}

// xNames are the JSON fields that hold each x-axis, in order of preference.
var (
	stepFields   = []string{"step", "steps_seen"}
	tokenFields  = []string{"tokens_seen", "tokens"}
	timeFields   = []string{"wall_time", "elapsed_s", "elapsed", "time"}
	nonMetric    = map[string]bool{"step": true, "steps_seen": true, "tokens_seen": true, "tokens": true, "wall_time": true, "elapsed_s": true, "elapsed": true, "time": true, "unix_time": true, "timestamp": true}
	maxLineBytes = 16 << 20
)

// runData is the columnar, incrementally loaded contents of one run's
// metrics.jsonl.
type runData struct {
	mu sync.RWMutex

	rows               int
	step, tokens, time []float64
	superseded         []bool               // rows replaced by a resumed run that repeated their step
	maxStep            float64              // largest step seen so far
	cols               map[string][]float32 // NaN where a row lacks the metric
	events             []Event
	lastStr            map[string]string  // last value of string fields, for change events
	lastNum            map[string]float64 // last value of watched numeric fields

	offset   int64 // bytes of metrics.jsonl consumed
	lineNo   int
	badLines int
	firstBad string
	t0       float64 // first wall-clock value, so time starts at 0
	hasT0    bool

	rec *flatRecord // reused for every line

	alertsOffset int64
	alerts       []Event
	modTime      time.Time
}

func newRunData() *runData {
	return &runData{cols: map[string][]float32{}, lastStr: map[string]string{}, lastNum: map[string]float64{}, rec: newFlatRecord()}
}

// Run is one run directory the dashboard serves.
type Run struct {
	Name string
	Dir  string
	data *runData
}

// refresh reads whatever was appended to metrics.jsonl and alerts.jsonl since
// the last call. A file that shrank (rewritten) is read again from the start.
func (r *Run) refresh() error {
	d := r.data
	d.mu.Lock()
	defer d.mu.Unlock()
	path := filepath.Join(r.Dir, "metrics.jsonl")
	st, err := os.Stat(path)
	if err != nil {
		if os.IsNotExist(err) {
			return nil
		}
		return fmt.Errorf("run %s: %w", r.Name, err)
	}
	if st.Size() < d.offset {
		*d = *newRunData()
	}
	if st.Size() > d.offset {
		if err := d.readMetrics(path); err != nil {
			return fmt.Errorf("run %s: %w", r.Name, err)
		}
	}
	d.modTime = st.ModTime()
	return d.readAlerts(filepath.Join(r.Dir, "alerts.jsonl"))
}

func (d *runData) readMetrics(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := f.Seek(d.offset, io.SeekStart); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	br := bufio.NewReaderSize(f, 1<<20)
	rec := d.rec
	for {
		line, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			// A very long line: gather it whole.
			buf := append([]byte(nil), line...)
			for err == bufio.ErrBufferFull && len(buf) < maxLineBytes {
				line, err = br.ReadSlice('\n')
				buf = append(buf, line...)
			}
			line = buf
		}
		if err != nil && err != io.EOF && err != bufio.ErrBufferFull {
			return fmt.Errorf("%s: %w", path, err)
		}
		if len(line) == 0 || line[len(line)-1] != '\n' {
			// Incomplete last line: the writer is mid-append; read it next time.
			return nil
		}
		d.offset += int64(len(line))
		d.lineNo++
		body := bytes.TrimSpace(line)
		if len(body) == 0 {
			continue
		}
		rec.reset()
		if perr := scanLine(body, rec); perr != nil {
			d.badLines++
			if d.firstBad == "" {
				d.firstBad = fmt.Sprintf("%s:%d: %v", path, d.lineNo, perr)
			}
			continue
		}
		d.add(rec)
		if err == io.EOF {
			return nil
		}
	}
}

func first(rec *flatRecord, names []string) (float64, bool) {
	for _, n := range names {
		if v, ok := rec.num(n); ok {
			return v, true
		}
	}
	return math.NaN(), false
}

// add appends one flattened metrics line as a row.
func (d *runData) add(rec *flatRecord) {
	step, _ := first(rec, stepFields)
	tokens, _ := first(rec, tokenFields)
	wall, ok := first(rec, timeFields)
	if ok && !d.hasT0 {
		d.t0, d.hasT0 = wall, true
	}
	if ok {
		wall -= d.t0
	}
	row := d.rows
	d.rows++
	// A resumed run repeats the steps after its checkpoint: the new rows
	// supersede the old ones from that step on.
	if row > 0 && step < d.maxStep {
		for i := row - 1; i >= 0; i-- {
			if d.step[i] >= step {
				d.superseded[i] = true
			} else if !d.superseded[i] {
				break
			}
		}
	}
	if !math.IsNaN(step) {
		d.maxStep = step
	}
	d.superseded = append(d.superseded, false)
	d.step = append(d.step, step)
	d.tokens = append(d.tokens, tokens)
	d.time = append(d.time, wall)
	for _, e := range rec.kvs {
		name, v := e.name, e.num
		if e.isS || nonMetric[name] {
			continue
		}
		col, ok := d.cols[name]
		if !ok {
			col = make([]float32, row, max(row+1, cap(d.step)))
			for i := range col {
				col[i] = float32(math.NaN())
			}
		}
		for len(col) < row {
			col = append(col, float32(math.NaN()))
		}
		d.cols[name] = append(col, float32(v))
	}
	d.deriveEvents(rec, step, tokens, wall)
}

// column returns the values of name padded to the current row count.
func (d *runData) column(name string) []float32 {
	col := d.cols[name]
	for len(col) < d.rows {
		col = append(col, float32(math.NaN()))
	}
	d.cols[name] = col
	return col
}

func (d *runData) deriveEvents(rec *flatRecord, step, tokens, wall float64) {
	ev := func(kind, title, detail string) {
		d.events = append(d.events, Event{Step: step, Tokens: tokens, Time: wall, Kind: kind, Title: title, Detail: detail})
	}
	val := func(n string) float64 { v, _ := rec.num(n); return v }
	if val("skipped") == 1 {
		ev("skipped", "skipped step", fmt.Sprintf("loss %.4g, grad norm %.4g", val("train_loss_raw"), val("grad_global_norm")))
	}
	if val("clipped") == 1 {
		ev("clipped", "update clipped", fmt.Sprintf("update norm %.4g", val("update_norm")))
	}
	for _, f := range []struct{ field, kind, title string }{
		{"lr_phase", "lr_phase", "LR phase"},
		{"data_stage", "data_stage", "data stage"},
		{"stage", "data_stage", "data stage"},
	} {
		if s, ok := rec.str(f.field); ok {
			if old, seen := d.lastStr[f.field]; seen && old != s {
				ev(f.kind, fmt.Sprintf("%s: %s → %s", f.title, old, s), "")
			}
			d.lastStr[f.field] = s
		}
	}
	for _, f := range []string{"batch_size", "global_batch", "tokens_per_update"} {
		if v, ok := rec.num(f); ok {
			if old, seen := d.lastNum[f]; seen && old != v {
				ev("batch_size", fmt.Sprintf("%s: %g → %g", f, old, v), "")
			}
			d.lastNum[f] = v
			break
		}
	}
	if kind, ok := rec.str("event"); ok {
		title := kind
		if m, ok := rec.str("message"); ok {
			title = kind + ": " + m
		}
		k := kind
		switch {
		case strings.HasPrefix(kind, "checkpoint"):
			k = "checkpoint"
		case strings.Contains(kind, "warm"):
			k = "warm_start"
		}
		detail, _ := rec.str("detail")
		ev(k, title, detail)
	}
}

// readAlerts loads new lines of alerts.jsonl (written by the monitor).
func (d *runData) readAlerts(path string) error {
	f, err := os.Open(path)
	if err != nil {
		if os.IsNotExist(err) {
			return nil
		}
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if st.Size() < d.alertsOffset {
		d.alertsOffset, d.alerts = 0, nil
	}
	if _, err := f.Seek(d.alertsOffset, io.SeekStart); err != nil {
		return err
	}
	br := bufio.NewReader(f)
	for {
		line, err := br.ReadBytes('\n')
		if len(line) == 0 || line[len(line)-1] != '\n' {
			return nil
		}
		d.alertsOffset += int64(len(line))
		var a map[string]any
		if json.Unmarshal(line, &a) != nil {
			continue
		}
		d.alerts = append(d.alerts, alertEvent(a))
		if err != nil {
			return nil
		}
	}
}

func str(a map[string]any, keys ...string) string {
	for _, k := range keys {
		if v, ok := a[k]; ok {
			switch x := v.(type) {
			case string:
				return x
			case float64:
				return fmt.Sprint(x)
			}
		}
	}
	return ""
}

func num(a map[string]any, keys ...string) float64 {
	for _, k := range keys {
		if v, ok := a[k].(float64); ok {
			return v
		}
	}
	return math.NaN()
}

func alertEvent(a map[string]any) Event {
	e := Event{
		Step:     num(a, "step"),
		Tokens:   num(a, "tokens", "tokens_seen"),
		Time:     math.NaN(),
		Kind:     "alert",
		Severity: str(a, "severity", "sev"),
		Title:    str(a, "rule", "name", "title"),
		Detail:   str(a, "message", "detail", "summary"),
		Runbook:  str(a, "runbook"),
		Evidence: str(a, "evidence", "incident", "incident_dir"),
	}
	if v := str(a, "verdict", "classification"); v != "" {
		e.Kind = "spike"
		e.Detail = strings.TrimSpace(v + ". " + e.Detail)
	}
	return e
}

// names returns the metric names of the run, sorted.
func (d *runData) names() []string {
	out := make([]string, 0, len(d.cols))
	for n := range d.cols {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
