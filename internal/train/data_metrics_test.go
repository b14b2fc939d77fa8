package train

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/checkpoint"
	"github.com/kestrel-lm/kestrel/internal/datasrc"
	"github.com/kestrel-lm/kestrel/internal/runlog"
)

// twoSources wraps a datasrc.BytesSource as two sources: even rows of a batch come
// from "a", odd rows from "b", and the last `pad` targets of every "b" row
// are padding (-1). It records the step indices Fill saw and counts Close.
type twoSources struct {
	*datasrc.BytesSource
	pad    int
	steps  map[int]bool
	closed int
}

func (s *twoSources) SourceNames() []string { return []string{"a", "b"} }

func (s *twoSources) Fill(step, batch, row0, n int, inputs, targets, segIDs []int32, srcs []int) error {
	if err := s.BytesSource.Fill(step, batch, row0, n, inputs, targets, segIDs, srcs); err != nil {
		return err
	}
	s.steps[step] = true
	T := s.SeqLen()
	for r := 0; r < n; r++ {
		src := (row0 + r) % 2
		if srcs != nil {
			srcs[r] = src
		}
		if src == 1 {
			for i := T - s.pad; i < T; i++ {
				targets[r*T+i] = -1
			}
		}
	}
	return nil
}

func (s *twoSources) DescribeStep(step int) (string, error) {
	return fmt.Sprintf("index %d", step), nil
}

func (s *twoSources) Close() error { s.closed++; return nil }

// TestDataMetricsAndClose: every step line carries source_mix_share/<source>
// (share of the step's non-pad target tokens), tokens_per_update, pad_fraction (targets < 0 over all target
// positions) and dataloader_stall_frac; Fill sees 0-based step indices; Run
// closes a closable source; datasrc.DescribeBatch maps a metrics step to its index.
func TestDataMetricsAndClose(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	o := baseOpts(dir)
	o.Train.Steps, o.Train.MicroBatch = 3, 3 // B = 4: micro-batches of 3 + 1
	src := &twoSources{BytesSource: o.Data.(*datasrc.BytesSource), pad: 8, steps: map[int]bool{}}
	o.Data = src
	if _, err := Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	if src.closed != 1 {
		t.Errorf("Close called %d times, want 1", src.closed)
	}
	if want := map[int]bool{0: true, 1: true, 2: true}; len(src.steps) != 3 || !src.steps[0] || !src.steps[2] {
		t.Errorf("Fill saw step indices %v, want %v", src.steps, want)
	}
	lines := readLines(t, dir)
	if len(lines) != 3 {
		t.Fatalf("%d step lines", len(lines))
	}
	for i, l := range lines {
		num := func(k string) float64 {
			raw, ok := l[k]
			if !ok {
				t.Fatalf("step %d: no %q in the metrics line", i+1, k)
			}
			var v float64
			if err := json.Unmarshal(raw, &v); err != nil {
				t.Fatalf("step %d: %s = %s: %v", i+1, k, raw, err)
			}
			return v
		}
		// Shares of the step's non-pad target tokens: a's two rows hold 32
		// each, b's two rows 32 − 8 padded.
		if a, b := num("source_mix_share/a"), num("source_mix_share/b"); a != 64.0/112 || b != 48.0/112 {
			t.Errorf("step %d: shares a=%v b=%v, want %v and %v (shares of tokens)", i+1, a, b, 64.0/112, 48.0/112)
		}
		if n, seen := num("tokens_per_update"), num("tokens_seen"); n != 112 || seen != float64(112*(i+1)) {
			t.Errorf("step %d: tokens_per_update %v, tokens_seen %v; want 112 and %d (non-pad targets)", i+1, n, seen, 112*(i+1))
		}
		if p, want := num("pad_fraction"), float64(2*8)/float64(4*32); p != want {
			t.Errorf("step %d: pad_fraction %v, want %v", i+1, p, want)
		}
		if f := num("dataloader_stall_frac"); !(f >= 0 && f <= 1) {
			t.Errorf("step %d: dataloader_stall_frac %v", i+1, f)
		}
	}
	if d, ok, err := datasrc.DescribeBatch(src, 3); !ok || err != nil || d != "index 2" {
		t.Errorf("DescribeBatch(step 3) = %q %v %v, want the batch of index 2", d, ok, err)
	}
	if _, ok, _ := datasrc.DescribeBatch(o.Data.(*twoSources).BytesSource, 3); ok {
		t.Error("BytesSource does not describe batches")
	}

	// A source closed on an early error too.
	bad := &twoSources{BytesSource: src.BytesSource, steps: map[int]bool{}}
	o2 := baseOpts(filepath.Join(t.TempDir(), "bad"))
	o2.Data = bad
	o2.Model.SeqLen = 16 // differs from the data
	if _, err := Run(context.Background(), o2); err == nil || bad.closed != 1 {
		t.Errorf("mismatched seq_len: err %v, closed %d", err, bad.closed)
	}
}

// TestMaxMinutes: a run over train.max_minutes stops after the step that
// crossed it, with a full final evaluation and a time_limit checkpoint, and
// Result.TimeLimited; rerunning resumes and logs exactly the losses of an
// uninterrupted run.
func TestMaxMinutes(t *testing.T) {
	ref := filepath.Join(t.TempDir(), "ref")
	o := baseOpts(ref)
	o.Train.Steps = 6
	if _, err := Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	want := lossSeq(t, ref)

	dir := filepath.Join(t.TempDir(), "run")
	o = baseOpts(dir)
	o.Train.Steps, o.Train.MaxMinutes = 6, 1e-9 // over after the first step
	res, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if !res.TimeLimited || res.Interrupted || res.Step != 1 || math.IsNaN(res.ValLoss) || filepath.Base(res.Checkpoint) != checkpoint.Name(1) {
		t.Fatalf("result %+v", res)
	}
	if err := checkpoint.Verify(res.Checkpoint); err != nil {
		t.Fatal(err)
	}
	l, err := checkpoint.Load(res.Checkpoint)
	if err != nil || l.State.Kind != "time_limit" || l.State.Step != 1 {
		t.Fatalf("checkpoint: %v %+v", err, l)
	}
	evals := evalLines(t, dir)
	wantRows := o.Data.ValRows(0) * o.Model.SeqLen
	if len(evals) != 1 || evals[0].Step != 1 || evals[0].ValTokens != wantRows {
		t.Fatalf("eval lines %+v, want one at step 1 over every validation row (%d tokens)", evals, wantRows)
	}

	// The limit applies per invocation: the next one resumes and goes on.
	o = baseOpts(dir)
	o.Train.Steps, o.Train.MaxMinutes = 6, 10
	res, err = Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Resumed || res.TimeLimited || res.Step != 6 {
		t.Fatalf("rerun result %+v", res)
	}
	if got := lossSeq(t, dir); !slices.Equal(got, want) {
		t.Errorf("losses differ after the time-limited stop:\n got %v\nwant %v", got, want)
	}
	if (Config{MaxMinutes: -1, Steps: 1, BatchSize: 1}).Validate() == nil ||
		!strings.Contains(Config{MaxMinutes: math.Inf(1), Steps: 1, BatchSize: 1}.Validate().Error(), "train.max_minutes") {
		t.Error("bad train.max_minutes accepted")
	}
}

// evalLine is what the tests check of an evaluation line.
type evalLine struct{ Step, ValTokens int }

func evalLines(t *testing.T, dir string) []evalLine {
	t.Helper()
	log, err := runlog.Load(filepath.Join(dir, "metrics.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var out []evalLine
	vl, vt := log.Column("val_loss"), log.Column("val_tokens")
	for i := 0; i < log.Rows; i++ {
		if vl != nil && !math.IsNaN(float64(vl[i])) {
			out = append(out, evalLine{Step: int(log.Step[i]), ValTokens: int(vt[i])})
		}
	}
	return out
}
