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

	"github.com/kestrel-lm/kestrel/internal/runlog"
	"github.com/kestrel-lm/kestrel/internal/tfevents"
	"github.com/kestrel-lm/kestrel/monitor"
)

// Source formats Read understands.
const (
	FormatAuto     = "auto"
	FormatKestrel  = "kestrel"  // a kestrel run directory (metrics.jsonl, else metrics.sqlite)
	FormatJSONL    = "jsonl"    // one JSON object per line from any trainer
	FormatTFEvents = "tfevents" // TensorBoard event files (a file or a directory of them)
)

// Options say how to read another trainer's metrics.
type Options struct {
	Format string
	// Map renames fields: kestrel name -> field name in the source, e.g.
	// {"train_loss_raw": "loss", "step": "iter", "tokens_seen": "tokens"}.
	// Unmapped fields keep their names; nested objects and arrays flatten
	// with "/" (as in the dashboard).
	Map map[string]string
	// Follow keeps reading as the source grows until ctx is cancelled.
	Follow bool
	// Poll is the follow-mode polling interval (default 500 ms).
	Poll time.Duration
}

// DetectFormat picks the format of path: a directory with metrics.jsonl or
// metrics.sqlite is a kestrel run, a directory or file named
// events.out.tfevents.* is TensorBoard, anything else JSONL.
func DetectFormat(path string) (string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("watch: %w", err)
	}
	if st.IsDir() {
		for _, n := range []string{"metrics.jsonl", "metrics.sqlite"} {
			if _, err := os.Stat(filepath.Join(path, n)); err == nil {
				return FormatKestrel, nil
			}
		}
		if fs, _ := filepath.Glob(filepath.Join(path, tfevents.FilePrefix+"*")); len(fs) > 0 {
			return FormatTFEvents, nil
		}
		return "", fmt.Errorf("watch: %s: no metrics.jsonl, metrics.sqlite or events.out.tfevents.* in the directory", path)
	}
	if strings.HasPrefix(filepath.Base(path), tfevents.FilePrefix) {
		return FormatTFEvents, nil
	}
	if strings.HasSuffix(path, ".sqlite") {
		return FormatKestrel, nil
	}
	return FormatJSONL, nil
}

// Read reads samples from path and calls fn for each, in step order within
// each file. In follow mode it keeps polling the (JSONL or TensorBoard)
// source for appended records until ctx is done.
func Read(ctx context.Context, path string, opts Options, fn func(monitor.Sample) error) error {
	format := opts.Format
	if format == "" || format == FormatAuto {
		f, err := DetectFormat(path)
		if err != nil {
			return err
		}
		format = f
	}
	if opts.Poll <= 0 {
		opts.Poll = 500 * time.Millisecond
	}
	m := newMapper(opts.Map)
	switch format {
	case FormatKestrel:
		st, err := os.Stat(path)
		if err != nil {
			return fmt.Errorf("watch: %w", err)
		}
		if st.IsDir() {
			if _, err := os.Stat(filepath.Join(path, "metrics.jsonl")); err == nil {
				return readJSONL(ctx, filepath.Join(path, "metrics.jsonl"), opts, m, fn)
			}
			path = filepath.Join(path, "metrics.sqlite")
		}
		samples, _, err := monitor.ReadStore(path)
		if err != nil {
			return err
		}
		for _, s := range samples {
			if err := fn(s); err != nil {
				return err
			}
		}
		return nil
	case FormatJSONL:
		return readJSONL(ctx, path, opts, m, fn)
	case FormatTFEvents:
		return readTFEvents(ctx, path, opts, m, fn)
	}
	return fmt.Errorf("watch: unknown format %q (want auto, kestrel, jsonl or tfevents)", format)
}

// Watch feeds every sample of path to m and calls onAlert for each alert
// (including the verdicts of spikes still pending at the end of a
// non-follow read).
func Watch(ctx context.Context, path string, opts Options, m *monitor.Monitor, onAlert func(monitor.Alert)) error {
	err := Read(ctx, path, opts, func(s monitor.Sample) error {
		for _, a := range m.Observe(s) {
			if onAlert != nil {
				onAlert(a)
			}
		}
		return ctx.Err()
	})
	if errors.Is(err, context.Canceled) {
		err = nil
	}
	for _, a := range m.Flush() {
		if onAlert != nil {
			onAlert(a)
		}
	}
	return err
}

// mapper turns source field names into kestrel names.
type mapper struct {
	rev map[string]string // source field -> kestrel name
}

func newMapper(m map[string]string) *mapper {
	r := &mapper{rev: map[string]string{}}
	for k, v := range m {
		r.rev[v] = k
	}
	return r
}

func (m *mapper) name(field string) string {
	if n, ok := m.rev[field]; ok {
		return n
	}
	return field
}

var (
	stepNames   = []string{"step", "steps_seen", "iter", "iteration", "global_step"}
	tokenNames  = []string{"tokens_seen", "tokens"}
	timeNames   = []string{"time", "wall_time", "timestamp", "unix_time"}
	batchFields = map[string]bool{"batch_ids": true, "ids": true, "sources": true, "batch_sources": true, "doc_ids": true}
	// axisNames are read into Sample.Step/Tokens/Time, not Values.
	axisNames = map[string]bool{"step": true, "iter": true, "iteration": true, "global_step": true, "tokens": true, "time": true, "wall_time": true, "timestamp": true, "unix_time": true}
)

// fields is one line's flattened fields under kestrel names.
type fields struct {
	nums  map[string]float64
	strs  map[string]string
	lists map[string][]listItem // batch fields: the array's elements
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
	f.nums, f.strs, f.lists = map[string]float64{}, map[string]string{}, map[string][]listItem{}
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

// parseLine decodes one metrics line into rec and builds its sample under
// kestrel names; line numbers the steps of a source without a step field.
// The bool is false for a line with no metric values.
func parseLine(b []byte, rec *runlog.Record, m *mapper, line int) (monitor.Sample, bool, error) {
	if err := runlog.ParseLine(b, rec); err != nil {
		return monitor.Sample{}, false, err
	}
	var f fields
	f.collect(rec, m)
	s, ok := f.sample(line)
	return s, ok, nil
}

func readJSONL(ctx context.Context, path string, opts Options, m *mapper, fn func(monitor.Sample) error) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("watch: %w", err)
	}
	defer func() { f.Close() }()
	var pending []byte
	buf := make([]byte, 1<<20)
	rec := runlog.NewRecord()
	line := 0
	lastStep, skipUpTo := int64(0), int64(math.MinInt64)
	for {
		n, err := f.Read(buf)
		if n > 0 {
			pending = append(pending, buf[:n]...)
			for {
				i := bytes.IndexByte(pending, '\n')
				if i < 0 {
					break
				}
				body := bytes.TrimSpace(pending[:i])
				pending = pending[i+1:]
				line++
				if len(body) == 0 {
					continue
				}
				s, ok, perr := parseLine(body, rec, m, line)
				if perr != nil {
					return fmt.Errorf("%s:%d: %w", path, line, perr)
				}
				if !ok || s.Step <= skipUpTo {
					continue // a rewritten file's lines already fed
				}
				lastStep = s.Step
				if ferr := fn(s); ferr != nil {
					return ferr
				}
			}
		}
		if err == io.EOF || (err == nil && n == 0) {
			if !opts.Follow {
				if len(bytes.TrimSpace(pending)) > 0 {
					return fmt.Errorf("%s:%d: incomplete last line (no newline)", path, line+1)
				}
				return nil
			}
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(opts.Poll):
			}
			// A trainer that resumes rewrites metrics.jsonl (temp file +
			// rename): follow the new file, skipping steps already fed.
			if st, serr := os.Stat(path); serr == nil {
				if cur, cerr := f.Stat(); cerr == nil && !os.SameFile(st, cur) {
					nf, oerr := os.Open(path)
					if oerr == nil {
						f.Close()
						f, pending, line, skipUpTo = nf, nil, 0, lastStep
					}
				}
			}
			continue
		}
		if err != nil {
			return fmt.Errorf("watch: %s: %w", path, err)
		}
	}
}

// readTFEvents reads TensorBoard event files, merging events of the same
// step into one Sample.
func readTFEvents(ctx context.Context, path string, opts Options, m *mapper, fn func(monitor.Sample) error) error {
	files := []string{path}
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		files, _ = filepath.Glob(filepath.Join(path, tfevents.FilePrefix+"*"))
		sort.Strings(files)
		if len(files) == 0 {
			return fmt.Errorf("watch: %s: no events.out.tfevents.* files", path)
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
		return fn(s)
	}
	offsets := map[string]int64{}
	for {
		for _, file := range files {
			b, err := os.ReadFile(file)
			if err != nil {
				return fmt.Errorf("watch: %w", err)
			}
			off := offsets[file]
			recs, rerr := tfevents.ReadRecords(bytes.NewReader(b[off:]))
			if rerr != nil && !(opts.Follow && errors.Is(rerr, io.ErrUnexpectedEOF)) {
				return fmt.Errorf("watch: %s: %w", file, rerr)
			}
			for _, r := range recs {
				off += int64(len(r)) + tfevents.RecordOverhead
				e, err := tfevents.Unmarshal(r)
				if err != nil {
					return fmt.Errorf("watch: %s: byte %d: %w", file, off, err)
				}
				if len(e.Scalars) == 0 {
					continue
				}
				if cur != nil && cur.Step != e.Step {
					if err := emit(); err != nil {
						return err
					}
				}
				if cur == nil {
					sec, frac := math.Modf(e.WallTime)
					cur = &monitor.Sample{Step: e.Step, Time: time.Unix(int64(sec), int64(frac*1e9)), Values: map[string]float64{}}
				}
				for _, sc := range e.Scalars {
					cur.Values[m.name(sc.Tag)] = float64(sc.Value)
				}
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
	}
}
