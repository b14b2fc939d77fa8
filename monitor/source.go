package monitor

import (
	"bytes"
	"context"
	"encoding/json"
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
)

// Source formats ReadSource understands.
const (
	FormatAuto     = "auto"
	FormatKestrel  = "kestrel"  // a kestrel run directory (metrics.jsonl, else metrics.sqlite)
	FormatJSONL    = "jsonl"    // one JSON object per line from any trainer
	FormatTFEvents = "tfevents" // TensorBoard event files (a file or a directory of them)
)

// SourceOptions say how to read another trainer's metrics.
type SourceOptions struct {
	Format string
	// Map renames fields: kestrel name -> field name in the source, e.g.
	// {"train_loss_raw": "loss", "step": "iter", "tokens_seen": "tokens"}.
	// Unmapped fields keep their names; nested objects flatten with "/".
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
		if fs, _ := filepath.Glob(filepath.Join(path, "events.out.tfevents.*")); len(fs) > 0 {
			return FormatTFEvents, nil
		}
		return "", fmt.Errorf("watch: %s: no metrics.jsonl, metrics.sqlite or events.out.tfevents.* in the directory", path)
	}
	if strings.HasPrefix(filepath.Base(path), "events.out.tfevents.") {
		return FormatTFEvents, nil
	}
	if strings.HasSuffix(path, ".sqlite") {
		return FormatKestrel, nil
	}
	return FormatJSONL, nil
}

// ReadSource reads samples from path and calls fn for each, in step order
// within each file. In follow mode it keeps polling the (JSONL or
// TensorBoard) source for appended records until ctx is done.
func ReadSource(ctx context.Context, path string, opts SourceOptions, fn func(Sample) error) error {
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
		samples, _, err := ReadStore(path)
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
		return readTFEventsSource(ctx, path, opts, m, fn)
	}
	return fmt.Errorf("watch: unknown format %q (want auto, kestrel, jsonl or tfevents)", format)
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
)

// sampleFromFields builds a Sample from flattened numeric and string-list
// fields (already renamed).
func sampleFromFields(nums map[string]float64, lists map[string][]string, strs map[string]string, line int) (Sample, bool) {
	s := Sample{Values: map[string]float64{}}
	hasStep := false
	for _, n := range stepNames {
		if v, ok := nums[n]; ok && finite(v) {
			s.Step, hasStep = int64(v), true
			break
		}
	}
	if !hasStep {
		s.Step = int64(line)
	}
	for _, n := range tokenNames {
		if v, ok := nums[n]; ok && finite(v) {
			s.Tokens = int64(v)
			break
		}
	}
	for _, n := range timeNames {
		if v, ok := nums[n]; ok && finite(v) && v > 1e8 {
			sec, frac := math.Modf(v)
			s.Time = time.Unix(int64(sec), int64(frac*1e9))
			break
		}
		if v, ok := strs[n]; ok {
			if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
				s.Time = t
				break
			}
		}
	}
	skip := map[string]bool{"step": true, "iter": true, "iteration": true, "global_step": true, "tokens": true, "time": true, "wall_time": true, "timestamp": true, "unix_time": true}
	for k, v := range nums {
		if !skip[k] {
			s.Values[k] = v
		}
	}
	if len(lists) > 0 {
		b := &Batch{IDs: lists["batch_ids"], Sources: lists["sources"], DocIDs: lists["doc_ids"]}
		if b.IDs == nil {
			b.IDs = lists["ids"]
		}
		if b.Sources == nil {
			b.Sources = lists["batch_sources"]
		}
		s.Batch = b
	}
	return s, len(s.Values) > 0
}

// sanitizeJSON rewrites the non-standard NaN, Infinity and -Infinity
// literals (as Python's json writes them) into strings Go can decode.
func sanitizeJSON(b []byte) []byte {
	if !bytes.Contains(b, []byte("NaN")) && !bytes.Contains(b, []byte("Infinity")) {
		return b
	}
	var out []byte
	inStr, esc := false, false
	for i := 0; i < len(b); i++ {
		c := b[i]
		if inStr {
			out = append(out, c)
			if esc {
				esc = false
			} else if c == '\\' {
				esc = true
			} else if c == '"' {
				inStr = false
			}
			continue
		}
		switch {
		case c == '"':
			inStr = true
			out = append(out, c)
		case bytes.HasPrefix(b[i:], []byte("NaN")):
			out = append(out, `"NaN"`...)
			i += 2
		case bytes.HasPrefix(b[i:], []byte("-Infinity")):
			out = append(out, `"-Inf"`...)
			i += 8
		case bytes.HasPrefix(b[i:], []byte("Infinity")):
			out = append(out, `"+Inf"`...)
			i += 7
		default:
			out = append(out, c)
		}
	}
	return out
}

func flatten(prefix string, v any, m *mapper, nums map[string]float64, lists map[string][]string, strs map[string]string) {
	switch x := v.(type) {
	case float64:
		nums[m.name(prefix)] = x
	case bool:
		if x {
			nums[m.name(prefix)] = 1
		} else {
			nums[m.name(prefix)] = 0
		}
	case string:
		switch x {
		case "NaN", "nan":
			nums[m.name(prefix)] = math.NaN()
		case "+Inf", "Inf", "inf", "Infinity":
			nums[m.name(prefix)] = math.Inf(1)
		case "-Inf", "-inf", "-Infinity":
			nums[m.name(prefix)] = math.Inf(-1)
		default:
			strs[m.name(prefix)] = x
		}
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			name := k
			if prefix != "" {
				name = prefix + "/" + k
			}
			flatten(name, x[k], m, nums, lists, strs)
		}
	case []any:
		name := m.name(prefix)
		if batchFields[name] {
			for _, e := range x {
				switch y := e.(type) {
				case string:
					lists[name] = append(lists[name], y)
				case float64:
					lists[name] = append(lists[name], strconv.FormatFloat(y, 'f', -1, 64))
				}
			}
		}
	}
}

// ParseJSONLLine decodes one metrics line (file and line name errors).
func ParseJSONLLine(b []byte, m map[string]string, file string, line int) (Sample, bool, error) {
	var obj map[string]any
	if err := json.Unmarshal(sanitizeJSON(b), &obj); err != nil {
		return Sample{}, false, fmt.Errorf("%s:%d: %w", file, line, err)
	}
	return parseObj(obj, newMapper(m), line)
}

func parseObj(obj map[string]any, m *mapper, line int) (Sample, bool, error) {
	nums, lists, strs := map[string]float64{}, map[string][]string{}, map[string]string{}
	flatten("", obj, m, nums, lists, strs)
	s, ok := sampleFromFields(nums, lists, strs, line)
	return s, ok, nil
}

func readJSONL(ctx context.Context, path string, opts SourceOptions, m *mapper, fn func(Sample) error) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("watch: %w", err)
	}
	defer func() { f.Close() }()
	var pending []byte
	buf := make([]byte, 1<<20)
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
				var obj map[string]any
				if jerr := json.Unmarshal(sanitizeJSON(body), &obj); jerr != nil {
					return fmt.Errorf("%s:%d: %w", path, line, jerr)
				}
				s, ok, _ := parseObj(obj, m, line)
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

// readTFEventsSource reads TensorBoard event files, merging events of the
// same step into one Sample.
func readTFEventsSource(ctx context.Context, path string, opts SourceOptions, m *mapper, fn func(Sample) error) error {
	files := []string{path}
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		files, _ = filepath.Glob(filepath.Join(path, "events.out.tfevents.*"))
		sort.Strings(files)
		if len(files) == 0 {
			return fmt.Errorf("watch: %s: no events.out.tfevents.* files", path)
		}
	}
	var cur *Sample
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
			recs, rerr := ReadTFRecords(bytes.NewReader(b[off:]))
			if rerr != nil && !(opts.Follow && errors.Is(rerr, io.ErrUnexpectedEOF)) {
				return fmt.Errorf("watch: %s: %w", file, rerr)
			}
			for _, r := range recs {
				off += int64(len(r)) + 16
				e, err := UnmarshalTFEvent(r)
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
					cur = &Sample{Step: e.Step, Time: time.Unix(int64(sec), int64(frac*1e9)), Values: map[string]float64{}}
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

// Watch feeds every sample of path to m and calls onAlert for each alert
// (including the verdicts of spikes still pending at the end of a
// non-follow read).
func Watch(ctx context.Context, path string, opts SourceOptions, m *Monitor, onAlert func(Alert)) error {
	err := ReadSource(ctx, path, opts, func(s Sample) error {
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
