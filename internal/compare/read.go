package compare

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"sort"

	"github.com/kestrel-lm/kestrel/internal/fileguard"
	"github.com/kestrel-lm/kestrel/internal/rundir"
	"github.com/kestrel-lm/kestrel/internal/runlog"
)

// point is one record's value: at a step and its tokens_seen.
type point struct {
	Step   int
	Tokens int64
	V      float64
}

// series are a run's metrics.jsonl read into per-metric points, ordered
// by step: train_loss_raw from the step lines, and every numeric field of
// the evaluation lines (val_loss, slice_val_loss/<source>, bpb/…,
// bench/…, bench_stderr/…). A step written twice (a resume's rerun) keeps
// the later line.
type series struct {
	train    []point
	eval     map[string][]point
	lastStep int
	lastTok  int64
	badLines int
}

// evalKeys are the fields of an evaluation line that are no metric to
// compare.
var evalKeys = map[string]bool{"step": true, "tokens_seen": true, "wall_time": true, "val_tokens": true, "eval_time": true, "train_val_gap": true, "ema_gap": true}

// readSeries reads dir/metrics.jsonl (a regular file only).
func readSeries(dir string) (*series, error) {
	path := rundir.Of(dir).Metrics()
	f, err := fileguard.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: no metrics.jsonl: not a kestrel run directory", dir)
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	s := &series{eval: map[string][]point{}}
	train := map[int]point{}
	evals := map[string]map[int]point{}
	rec := runlog.NewRecord()
	tooLong, err := runlog.EachLine(f, func(line []byte) { s.add(bytes.TrimSpace(line), rec, train, evals) })
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	s.badLines += tooLong
	s.train = sorted(train)
	for k, m := range evals {
		s.eval[k] = sorted(m)
	}
	if len(s.train) == 0 {
		return nil, fmt.Errorf("%s: no training steps", path)
	}
	return s, nil
}

// add files one line: a step line (train_loss_raw), an evaluation line
// (val_loss), or nothing (checkpoint and other events, bad lines).
func (s *series) add(line []byte, rec *runlog.Record, train map[int]point, evals map[string]map[int]point) {
	if len(line) == 0 {
		return
	}
	if runlog.ParseLine(line, rec) != nil {
		s.badLines++
		return
	}
	if _, ok := rec.Str("event"); ok {
		return
	}
	st, ok1 := rec.Num("step")
	tok, ok2 := rec.Num("tokens_seen")
	if !ok1 || !ok2 {
		s.badLines++
		return
	}
	step, tokens := int(st), int64(tok)
	if v, ok := rec.Num("train_loss_raw"); ok {
		train[step] = point{step, tokens, v}
		if step >= s.lastStep {
			s.lastStep, s.lastTok = step, tokens
		}
		return
	}
	if _, ok := rec.Num("val_loss"); !ok {
		return
	}
	rec.Each(func(name string, v float64) {
		if evalKeys[name] {
			return
		}
		m := evals[name]
		if m == nil {
			m = map[int]point{}
			evals[name] = m
		}
		m[step] = point{step, tokens, v}
	})
}

func sorted(m map[int]point) []point {
	out := make([]point, 0, len(m))
	for _, p := range m {
		if !math.IsNaN(p.V) && !math.IsInf(p.V, 0) { // a non-finite loss is no point to compare (and no JSON number)
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Step < out[j].Step })
	return out
}
