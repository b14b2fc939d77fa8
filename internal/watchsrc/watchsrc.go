// Package watchsrc reads the metrics of runs kestrel did not train — a
// kestrel run directory, a JSONL file from any trainer, TensorBoard event
// files — as monitor samples, for `kestrel watch`. JSON lines are parsed and
// flattened by runlog (the dashboard's parser); event files are decoded by
// tfevents.
package watchsrc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/kestrel-lm/kestrel/internal/fileguard"
	"github.com/kestrel-lm/kestrel/internal/rundir"
	"github.com/kestrel-lm/kestrel/internal/runlog"
	"github.com/kestrel-lm/kestrel/internal/tfevents"
	"github.com/kestrel-lm/kestrel/monitor"
)

// Source formats Read understands.
const (
	FormatAuto    = "auto"
	FormatKestrel = "kestrel" // a kestrel run directory (metrics.jsonl, else metrics.sqlite)
	// FormatJSONL is a line-oriented log: one JSON object per line from any
	// trainer, or the plain-text lines of llm.c's main.log and nanoGPT's
	// train.py output (see parseTextLine).
	FormatJSONL    = "jsonl"
	FormatCSV      = "csv"      // a CSV export (W&B run history or chart, Keras CSVLogger)
	FormatTFEvents = "tfevents" // TensorBoard event files (a file or a directory of them)
)

// Options say how to read another trainer's metrics.
type Options struct {
	Format string
	// Map renames fields: kestrel name -> field name in the source, e.g.
	// {"train_loss_raw": "loss", "step": "iter", "tokens_seen": "tokens"}.
	// Fields no mapping names and that are other trainers' names of a
	// registered metric (monitor.Metric.Aliases: loss, train/loss, trl,
	// lr, grad_norm …) take the metric's name; the first such field seen
	// is the one used for the whole source. Other fields keep their names;
	// nested objects and arrays flatten with "/" (as in the dashboard).
	Map map[string]string
	// Follow keeps reading as the source grows until ctx is cancelled.
	Follow bool
	// Poll is the follow-mode polling interval (default 500 ms).
	Poll time.Duration
	// OnIdle, in follow mode, is called at every poll once a record was
	// read: silent is the time since the last record arrived, median the
	// source's median interval between records (from the records' own
	// times, else from their arrival in different polls; 0 while unknown),
	// lastStep the last record's step. It is not called after the
	// checkpoint a kestrel trainer writes as it exits (final, time_limit,
	// interrupt). Watch sets it to the monitor's monitoring_blackout rule
	// (Monitor.Silence) when it is nil.
	OnIdle func(lastStep int64, silent, median time.Duration)
}

// LossMetrics are the kestrel names of which a source must carry at least
// one for a watch to be able to say anything about its health.
var LossMetrics = []string{"train_loss_raw", "train_loss_ema", "val_loss"}

// maxFieldsKept bounds Report.Fields.
const maxFieldsKept = 200

// Report says what a read saw besides its samples.
type Report struct {
	Samples  int    // samples fed
	BadLines int    // lines or records skipped as unreadable
	BadBytes int64  // bytes of event files skipped to resynchronise
	FirstBad string // the first of them: "file:line: error"
	// Loss is true when a sample carried one of LossMetrics.
	Loss bool
	// Fields are the source's field names (before renaming), sorted; at
	// most maxFieldsKept.
	Fields []string
}

// DetectFormat picks the format of path: a directory with metrics.jsonl or
// metrics.sqlite is a kestrel run, a directory or file named
// events.out.tfevents.* is TensorBoard (also a Keras log directory with
// them under train/), a .csv file CSV, anything else JSONL.
func DetectFormat(path string) (string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("watch: %w", err)
	}
	if st.IsDir() {
		for _, n := range []string{rundir.MetricsName, rundir.StoreName} {
			if _, err := os.Stat(filepath.Join(path, n)); err == nil {
				return FormatKestrel, nil
			}
		}
		if len(eventFiles(path)) > 0 {
			return FormatTFEvents, nil
		}
		return "", fmt.Errorf("watch: %s: no metrics.jsonl, metrics.sqlite or events.out.tfevents.* in the directory (or its train/)", path)
	}
	if strings.HasPrefix(filepath.Base(path), tfevents.FilePrefix) {
		return FormatTFEvents, nil
	}
	if strings.HasSuffix(path, ".sqlite") {
		return FormatKestrel, nil
	}
	if strings.HasSuffix(strings.ToLower(path), ".csv") {
		return FormatCSV, nil
	}
	return FormatJSONL, nil
}

// eventFiles lists the event files of dir, else of dir/train (Keras'
// TensorBoard callback writes train/ and validation/), sorted.
func eventFiles(dir string) []string {
	for _, d := range []string{dir, filepath.Join(dir, "train")} {
		fs, _ := filepath.Glob(filepath.Join(d, tfevents.FilePrefix+"*"))
		if len(fs) > 0 {
			sort.Strings(fs)
			return fs
		}
	}
	return nil
}

// reader is one Read: the renaming and what it saw.
type reader struct {
	m    *mapper
	rep  Report
	seen map[string]bool
	fn   func(monitor.Sample) error

	// Liveness of a followed source (see Options.OnIdle).
	lastFeed time.Time // when the last record arrived
	lastTime time.Time // the last record's own time (zero: none)
	lastStep int64
	gaps     []float64 // the last maxGaps intervals between records (s)
	polls    int       // follow-mode polls so far
	feedPoll int       // the poll in which the last record arrived
	// ended is set when the last record is a kestrel checkpoint the
	// trainer writes as it exits (final, time_limit, interrupt): silence
	// after it is no blackout.
	ended bool
}

// endKinds are the checkpoint kinds kestrel's trainer writes just before
// it exits.
var endKinds = map[string]bool{"final": true, "time_limit": true, "interrupt": true}

// maxGaps bounds the intervals kept for the median.
const maxGaps = 64

// bad counts a skipped line or record; where is "file:line" or
// "file: byte N".
func (r *reader) bad(where string, err error) {
	r.rep.BadLines++
	if r.rep.FirstBad == "" {
		r.rep.FirstBad = where + ": " + err.Error()
	}
}

// feed passes s on, noting whether it carries a loss.
func (r *reader) feed(s monitor.Sample) error {
	r.rep.Samples++
	r.arrived(s)
	if !r.rep.Loss {
		for _, n := range LossMetrics {
			if _, ok := s.Values[n]; ok {
				r.rep.Loss = true
				break
			}
		}
	}
	return r.fn(s)
}

// arrived notes a record's arrival for the blackout check: the interval
// since the previous record by the records' own times when both carry one,
// else by arrival when they came in different polls (a backlog read at
// once says nothing about the writer's pace).
func (r *reader) arrived(s monitor.Sample) {
	now := time.Now()
	gap := -1.0
	switch {
	case !s.Time.IsZero() && !r.lastTime.IsZero():
		gap = s.Time.Sub(r.lastTime).Seconds()
	case s.Time.IsZero() && !r.lastFeed.IsZero() && r.polls != r.feedPoll:
		gap = now.Sub(r.lastFeed).Seconds()
	}
	if gap > 0 {
		if len(r.gaps) == maxGaps {
			r.gaps = append(r.gaps[:0], r.gaps[1:]...)
		}
		r.gaps = append(r.gaps, gap)
	}
	if !s.Time.IsZero() {
		r.lastTime = s.Time
	}
	r.lastFeed, r.feedPoll, r.lastStep, r.ended = now, r.polls, s.Step, false
}

// idle is called after each follow-mode poll wait: it reports the silence
// since the last record to opts.OnIdle.
func (r *reader) idle(opts Options) {
	r.polls++
	if opts.OnIdle == nil || r.lastFeed.IsZero() || r.ended {
		return
	}
	var med time.Duration
	if len(r.gaps) > 0 {
		g := append([]float64(nil), r.gaps...)
		sort.Float64s(g)
		m := g[len(g)/2]
		if len(g)%2 == 0 {
			m = (g[len(g)/2-1] + m) / 2
		}
		med = time.Duration(m * float64(time.Second))
	}
	opts.OnIdle(r.lastStep, time.Since(r.lastFeed), med)
}

// Read reads samples from path and calls fn for each, in step order within
// each file. Unreadable lines and records are counted in the Report and
// skipped; a line longer than MaxLineBytes ends the read with an error
// naming it. In follow mode it keeps polling the (line or TensorBoard)
// source for appended records until ctx is done.
func Read(ctx context.Context, path string, opts Options, fn func(monitor.Sample) error) (Report, error) {
	format := opts.Format
	if format == "" || format == FormatAuto {
		f, err := DetectFormat(path)
		if err != nil {
			return Report{}, err
		}
		format = f
	}
	if opts.Poll <= 0 {
		opts.Poll = 500 * time.Millisecond
	}
	r := &reader{m: newMapper(opts.Map), fn: fn}
	err := r.read(ctx, path, format, opts)
	for n := range r.m.seen {
		r.rep.Fields = append(r.rep.Fields, n)
	}
	sort.Strings(r.rep.Fields)
	return r.rep, err
}

func (r *reader) read(ctx context.Context, path, format string, opts Options) error {
	switch format {
	case FormatKestrel:
		st, err := os.Stat(path)
		if err != nil {
			return fmt.Errorf("watch: %w", err)
		}
		if st.IsDir() {
			if _, err := os.Stat(rundir.Of(path).Metrics()); err == nil {
				return r.readLines(ctx, rundir.Of(path).Metrics(), false, opts)
			}
			path = rundir.Of(path).Store()
		}
		samples, _, err := monitor.ReadStore(path)
		if err != nil {
			return err
		}
		for _, s := range samples {
			for k := range s.Values {
				r.m.see(k)
			}
			if err := r.feed(s); err != nil {
				return err
			}
		}
		return nil
	case FormatJSONL:
		return r.readLines(ctx, path, false, opts)
	case FormatCSV:
		return r.readLines(ctx, path, true, opts)
	case FormatTFEvents:
		return r.readTFEvents(ctx, path, opts)
	}
	return fmt.Errorf("watch: unknown format %q (want auto, kestrel, jsonl, csv or tfevents)", format)
}

// Watch feeds every sample of path to m and calls onAlert for each alert
// (including the verdicts of spikes still pending at the end of a
// non-follow read). In follow mode a source that stops writing raises the
// monitor's SEV0 monitoring_blackout (see Options.OnIdle).
func Watch(ctx context.Context, path string, opts Options, m *monitor.Monitor, onAlert func(monitor.Alert)) (Report, error) {
	if opts.Follow && opts.OnIdle == nil {
		opts.OnIdle = func(lastStep int64, silent, median time.Duration) {
			for _, a := range m.Silence(lastStep, silent, median) {
				if onAlert != nil {
					onAlert(a)
				}
			}
		}
	}
	rep, err := Read(ctx, path, opts, func(s monitor.Sample) error {
		for _, a := range m.Observe(s) {
			if onAlert != nil {
				onAlert(a)
			}
		}
		return ctx.Err()
	})
	// Following ends when ctx ends, for either reason (the poll between
	// reads already returns nil then); a deadline that passes while a
	// sample is being observed must not turn that into an error.
	if errors.Is(err, context.Canceled) || (opts.Follow && errors.Is(err, context.DeadlineExceeded)) {
		err = nil
	}
	for _, a := range m.Flush() {
		if onAlert != nil {
			onAlert(a)
		}
	}
	return rep, err
}

// aliasOf maps other trainers' names of registered metrics to the metric
// (the registry's Aliases); registered holds the metric names.
var aliasOf, registered = func() (map[string]string, map[string]bool) {
	a, r := map[string]string{}, map[string]bool{}
	for _, m := range monitor.Metrics() {
		r[m.Name] = true
		for _, al := range m.Aliases {
			a[al] = m.Name
		}
	}
	return a, r
}()

// mapper turns source field names into kestrel names: --map first, then
// the registry's aliases, each kestrel name bound to the first source
// field that gives it (Keras writes batch_loss and epoch_loss; only one
// of them can be train_loss_raw).
type mapper struct {
	rev      map[string]string // source field -> kestrel name (--map)
	explicit map[string]bool   // kestrel names --map gives
	bound    map[string]string // kestrel name -> the source field giving it
	seen     map[string]bool   // source field names seen (at most maxFieldsKept)
}

func newMapper(m map[string]string) *mapper {
	r := &mapper{rev: map[string]string{}, explicit: map[string]bool{}, bound: map[string]string{}, seen: map[string]bool{}}
	for k, v := range m {
		r.rev[v] = k
		r.explicit[k] = true
	}
	return r
}

func (m *mapper) see(field string) {
	if len(m.seen) < maxFieldsKept {
		m.seen[field] = true
	}
}

func (m *mapper) name(field string) string {
	m.see(field)
	if n, ok := m.rev[field]; ok {
		return n
	}
	if registered[field] {
		if _, ok := m.bound[field]; !ok {
			m.bound[field] = field
		}
		return field // the metric's own name always means the metric
	}
	c, ok := aliasOf[field]
	if !ok || m.explicit[c] {
		return field
	}
	if b, ok := m.bound[c]; ok && b != field {
		return field // another field already gives c
	}
	m.bound[c] = field
	return c
}

var (
	stepNames   = []string{"step", "steps_seen", "iter", "iteration", "global_step", "_step", "Step", "epoch"}
	tokenNames  = []string{"tokens_seen", "tokens"}
	timeNames   = []string{"time", "wall_time", "timestamp", "unix_time", "_timestamp"}
	batchFields = map[string]bool{"batch_ids": true, "ids": true, "sources": true, "batch_sources": true, "doc_ids": true}
	// axisNames are read into Sample.Step/Tokens/Time, not Values
	// (_runtime is W&B's seconds since the start).
	axisNames = map[string]bool{"step": true, "iter": true, "iteration": true, "global_step": true, "_step": true, "Step": true, "epoch": true,
		"tokens": true, "time": true, "wall_time": true, "timestamp": true, "unix_time": true, "_timestamp": true, "_runtime": true}
)

// fields is one line's flattened fields under kestrel names.
type fields struct {
	raw   map[string]float64 // a text or CSV line's numbers under the source's names
	nums  map[string]float64
	strs  map[string]string
	lists map[string][]listItem // batch fields: the array's elements
}

func (f *fields) reset() {
	f.raw, f.nums, f.strs, f.lists = map[string]float64{}, map[string]float64{}, map[string]string{}, map[string][]listItem{}
}

// rename moves raw's numbers (and strs) under kestrel names.
func (f *fields) rename(m *mapper) {
	for k, v := range f.raw {
		f.nums[m.name(k)] = v
	}
	strs := f.strs
	f.strs = map[string]string{}
	for k, v := range strs {
		f.strs[m.name(k)] = v
	}
}

type listItem struct {
	i int
	s string
}

// batchElem splits "doc_ids/3" into the batch field it belongs to (after
// renaming) and the element index.
func (m *mapper) batchElem(name string) (string, int, bool) {
	j := strings.LastIndexByte(name, '/')
	if j < 0 {
		return "", 0, false
	}
	i, err := strconv.Atoi(name[j+1:])
	if err != nil || i < 0 {
		return "", 0, false
	}
	field := m.name(name[:j])
	return field, i, batchFields[field]
}

// collect renames the record's flattened fields. Elements of the batch
// arrays (sources, doc_ids, batch_ids …) become lists, not values.
func (f *fields) collect(rec *runlog.Record, m *mapper) {
	f.reset()
	rec.Each(func(name string, v float64) {
		if field, i, ok := m.batchElem(name); ok {
			f.lists[field] = append(f.lists[field], listItem{i, strconv.FormatFloat(v, 'f', -1, 64)})
			return
		}
		f.nums[m.name(name)] = v
	})
	rec.EachStr(func(name, s string) {
		if field, i, ok := m.batchElem(name); ok {
			f.lists[field] = append(f.lists[field], listItem{i, s})
			return
		}
		f.strs[m.name(name)] = s
	})
}

func (f *fields) list(name string) []string {
	items := f.lists[name]
	if items == nil {
		return nil
	}
	sort.SliceStable(items, func(a, b int) bool { return items[a].i < items[b].i })
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.s
	}
	return out
}

// sample builds a Sample from one line's fields; line numbers the steps of
// a source without a step field.
func (f *fields) sample(line int) (monitor.Sample, bool) {
	s := monitor.Sample{Values: map[string]float64{}}
	hasStep := false
	for _, n := range stepNames {
		if v, ok := f.nums[n]; ok && finite(v) {
			s.Step, hasStep = int64(v), true
			break
		}
	}
	if !hasStep {
		s.Step = int64(line)
	}
	for _, n := range tokenNames {
		if v, ok := f.nums[n]; ok && finite(v) {
			s.Tokens = int64(v)
			break
		}
	}
	for _, n := range timeNames {
		if v, ok := f.nums[n]; ok && finite(v) && v > 1e8 {
			sec, frac := math.Modf(v)
			s.Time = time.Unix(int64(sec), int64(frac*1e9))
			break
		}
		if v, ok := f.strs[n]; ok {
			if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
				s.Time = t
				break
			}
		}
	}
	for k, v := range f.nums {
		if !axisNames[k] {
			s.Values[k] = v
		}
	}
	if len(f.lists) > 0 {
		b := &monitor.Batch{IDs: f.list("batch_ids"), Sources: f.list("sources"), DocIDs: f.list("doc_ids")}
		if b.IDs == nil {
			b.IDs = f.list("ids")
		}
		if b.Sources == nil {
			b.Sources = f.list("batch_sources")
		}
		s.Batch = b
	}
	return s, len(s.Values) > 0
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// parseLine decodes one metrics line — a JSON object, or a plain-text
// line of llm.c or nanoGPT — into rec and builds its sample under kestrel
// names; line numbers the steps of a source without a step field. The
// bool is false for a line with no metric values.
func parseLine(b []byte, rec *runlog.Record, m *mapper, line int) (monitor.Sample, bool, error) {
	var f fields
	if len(b) > 0 && b[0] != '{' {
		if !parseTextLine(string(b), &f) {
			return monitor.Sample{}, false, errors.New("neither a JSON object nor a known log line (llm.c s:N key:value, nanoGPT iter N: key value)")
		}
		f.rename(m)
	} else {
		if err := runlog.ParseLine(b, rec); err != nil {
			return monitor.Sample{}, false, err
		}
		f.collect(rec, m)
	}
	s, ok := f.sample(line)
	return s, ok, nil
}

// readLines reads a line-oriented source (JSONL and text logs, or CSV).
// Bad lines are counted and skipped; a line over MaxLineBytes ends the
// read with an error naming it.
func (r *reader) readLines(ctx context.Context, path string, isCSV bool, opts Options) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("watch: %w", err)
	}
	defer func() { f.Close() }()
	return r.readStream(ctx, path, f, isCSV, opts)
}

// readStream is readLines over an open stream; in follow mode, when path
// is replaced (a resumed trainer rewrites metrics.jsonl by rename) it
// switches to the new file, skipping the steps already fed.
func (r *reader) readStream(ctx context.Context, path string, src io.Reader, isCSV bool, opts Options) error {
	opened, _ := src.(*os.File) // the caller closes it
	// The read ends at Ctrl-C, even through a run of bad lines.
	lr := newLineReader(fileguard.Reader(ctx, src))
	rec := runlog.NewRecord()
	var tab *csvTable
	lastStep, skipUpTo := int64(0), int64(math.MinInt64)
	handle := func(line []byte, n int) error {
		body := bytes.TrimSpace(line)
		if len(body) == 0 {
			return nil
		}
		var s monitor.Sample
		var ok bool
		var perr error
		switch {
		case isCSV && tab == nil:
			tab = &csvTable{}
			if err := tab.header(body); err != nil {
				return fmt.Errorf("%s:%d: %w", path, n, err)
			}
			return nil
		case isCSV:
			var f fields
			if perr = tab.row(body, &f); perr == nil {
				f.rename(r.m)
				s, ok = f.sample(n)
			}
		default:
			s, ok, perr = parseLine(body, rec, r.m, n)
		}
		if perr != nil {
			r.bad(fmt.Sprintf("%s:%d", path, n), perr)
			return nil
		}
		if !ok || s.Step <= skipUpTo {
			return nil // no values, or a rewritten file's lines already fed
		}
		lastStep = s.Step
		if err := r.feed(s); err != nil {
			return err
		}
		if !isCSV && body[0] == '{' {
			k, _ := rec.Str("checkpoint_kind")
			r.ended = endKinds[k]
		}
		return nil
	}
	for {
		line, err := lr.next()
		if err == nil {
			if herr := handle(line, lr.n); herr != nil {
				return herr
			}
			continue
		}
		if errors.Is(err, errLineTooLong) {
			return fmt.Errorf("%s:%d: %w", path, lr.n+1, err)
		}
		if opts.Follow && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			return nil // following ends when ctx ends, also in the middle of a read
		}
		if err != io.EOF {
			return fmt.Errorf("watch: %s: %w", path, err)
		}
		if !opts.Follow {
			if line, ok := lr.rest(); ok {
				return handle(line, lr.n)
			}
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(opts.Poll):
		}
		r.idle(opts)
		f, isFile := src.(*os.File)
		if !isFile {
			continue
		}
		if st, serr := os.Stat(path); serr == nil {
			if cur, cerr := f.Stat(); cerr == nil && !os.SameFile(st, cur) {
				if nf, oerr := os.Open(path); oerr == nil {
					if f != opened {
						f.Close()
					}
					src, lr, tab, skipUpTo = nf, newLineReader(fileguard.Reader(ctx, nf)), nil, lastStep
					defer nf.Close()
				}
			}
		}
	}
}

// readTFEvents reads TensorBoard event files, merging events of the same
// step into one Sample. A record that does not decode is counted and
// skipped; a broken frame (a bad CRC, an implausible length) costs only
// its bytes: the read resynchronises on the next valid record
// (tfevents.Scan), counting the record and the bytes skipped. A torn last
// record is counted too, unless following (a writer mid-append).
func (r *reader) readTFEvents(ctx context.Context, path string, opts Options) error {
	files := []string{path}
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		files = eventFiles(path)
		if len(files) == 0 {
			return fmt.Errorf("watch: %s: no events.out.tfevents.* files (nor in train/)", path)
		}
	}
	var cur *monitor.Sample
	emit := func() error {
		if cur == nil || len(cur.Values) == 0 {
			cur = nil
			return nil
		}
		s := *cur
		cur = nil
		if v, ok := s.Values["tokens_seen"]; ok && s.Tokens == 0 {
			s.Tokens = int64(v)
		}
		return r.feed(s)
	}
	offsets := map[string]int64{}
	for {
		for _, file := range files {
			b, err := fileguard.ReadFileContext(ctx, file, 0)
			if err != nil {
				return fmt.Errorf("watch: %w", err)
			}
			off := min(offsets[file], int64(len(b)))
			recs, bad, rest := tfevents.Scan(b[off:])
			for _, c := range bad {
				r.rep.BadBytes += c.Bytes
				r.bad(fmt.Sprintf("%s: byte %d", file, off+c.Offset), fmt.Errorf("%s (%d bytes skipped)", c.Reason, c.Bytes))
			}
			for _, rec := range recs {
				if err := r.tfEvent(rec.Data, &cur, emit); err != nil {
					if errors.Is(err, errFeed) {
						return errors.Unwrap(err)
					}
					r.bad(fmt.Sprintf("%s: byte %d", file, off+rec.Offset), err)
				}
			}
			off += rest
			if !opts.Follow && off < int64(len(b)) {
				r.rep.BadBytes += int64(len(b)) - off
				r.bad(fmt.Sprintf("%s: byte %d", file, off), fmt.Errorf("torn last record (%d bytes)", int64(len(b))-off))
				off = int64(len(b))
			}
			offsets[file] = off
		}
		if !opts.Follow {
			return emit()
		}
		select {
		case <-ctx.Done():
			return emit()
		case <-time.After(opts.Poll):
		}
		r.idle(opts)
	}
}

// errFeed wraps an error of feeding a sample on (not a bad record).
var errFeed = errors.New("feed")

// tfEvent decodes one event record into *cur, emitting the sample before
// it when the step changes. A record that does not decode is its error; an
// error of emit comes back wrapped with errFeed.
func (r *reader) tfEvent(data []byte, cur **monitor.Sample, emit func() error) error {
	e, err := tfevents.Unmarshal(data)
	if err != nil {
		return err
	}
	if len(e.Scalars) == 0 {
		return nil
	}
	if *cur != nil && (*cur).Step != e.Step {
		if err := emit(); err != nil {
			return fmt.Errorf("%w: %w", errFeed, err)
		}
	}
	if *cur == nil {
		sec, frac := math.Modf(e.WallTime)
		*cur = &monitor.Sample{Step: e.Step, Time: time.Unix(int64(sec), int64(frac*1e9)), Values: map[string]float64{}}
	}
	for _, sc := range e.Scalars {
		(*cur).Values[r.m.name(sc.Tag)] = float64(sc.Value)
	}
	return nil
}
