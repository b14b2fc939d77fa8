package train

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/checkpoint"
	"github.com/kestrel-lm/kestrel/internal/comm"
	"github.com/kestrel-lm/kestrel/internal/datasrc"
	"github.com/kestrel-lm/kestrel/internal/kernels"
	"github.com/kestrel-lm/kestrel/internal/runlog"
)

// stopObserver fails, or calls hook, at one step (rank 0's observer).
type stopObserver struct {
	at   int
	err  error
	hook func()
}

func (o *stopObserver) OnStep(m *runlog.Step) error {
	if m.Step != o.at {
		return nil
	}
	if o.hook != nil {
		o.hook()
	}
	return o.err
}
func (o *stopObserver) OnEval(*runlog.Eval) error             { return nil }
func (o *stopObserver) OnCheckpoint(*runlog.Checkpoint) error { return nil }

// runRanks trains o on n in-process ranks, rank r under ctxs[r] (nil:
// Background), and returns every rank's result and error.
func runRanks(o Options, n int, ctxs []context.Context) ([]*Result, []error) {
	cs := comm.Local(n)
	res, errs := make([]*Result, n), make([]error, n)
	var wg sync.WaitGroup
	for r, c := range cs {
		oo := o
		oo.Comm = c
		data := corpus()
		k := len(data) * 9 / 10
		oo.Data = datasrc.NewBytesSource(data[:k], data[k:], 32, 42)
		if r != 0 {
			oo.Observers = nil
		}
		ctx := context.Background()
		if r < len(ctxs) && ctxs[r] != nil {
			ctx = ctxs[r]
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			res[r], errs[r] = Run(ctx, oo)
		}()
	}
	wg.Wait()
	return res, errs
}

// TestOneLoopEveryRankStops: with one loop for every rank, each way a run
// stops ends every rank at the same step, rank 0 alone writing: a branch's
// StopAt (a final checkpoint there), rank 0's observer stopping the run
// (the others get ErrStoppedByRank0), Ctrl-C on rank 0 alone (an
// interrupt checkpoint, every rank Interrupted) and train.max_minutes
// (every rank TimeLimited after step 1).
func TestOneLoopEveryRankStops(t *testing.T) {
	defer kernels.SetThreads(kernels.Threads())
	kernels.SetThreads(1)
	stop := errors.New("SEV0: stop the run")
	for _, tc := range []struct {
		name     string
		mod      func(o *Options, cancel func())
		cancel0  bool // rank 0 runs under a context the observer cancels
		step     int  // every rank's Result.Step
		err0     error
		errOther error
		ckpt     string // rank 0's newest checkpoint
		interr   bool
		timeLim  bool
	}{
		{name: "branch end", mod: func(o *Options, _ func()) { o.StopAt = 5 }, step: 5, ckpt: checkpoint.Name(5)},
		{name: "observer stop", mod: func(o *Options, _ func()) { o.Observers = []Observer{&stopObserver{at: 3, err: stop}} },
			step: 3, err0: stop, errOther: ErrStoppedByRank0, ckpt: ""},
		{name: "ctrl-c on rank 0", mod: func(o *Options, cancel func()) { o.Observers = []Observer{&stopObserver{at: 3, hook: cancel}} },
			cancel0: true, step: 3, ckpt: checkpoint.Name(3), interr: true},
		{name: "max_minutes", mod: func(o *Options, _ func()) { o.Train.MaxMinutes = 1e-9 }, step: 1, ckpt: checkpoint.Name(1), timeLim: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := baseOpts(t.TempDir())
			o.Train.Steps, o.Checkpoint.Every = 8, 100
			ctx0, cancel := context.WithCancel(context.Background())
			defer cancel()
			tc.mod(&o, cancel)
			ctxs := []context.Context{nil, nil}
			if tc.cancel0 {
				ctxs[0] = ctx0
			}
			res, errs := runRanks(o, 2, ctxs)
			if !errors.Is(errs[0], tc.err0) || tc.err0 == nil && errs[0] != nil {
				t.Fatalf("rank 0: %v, want %v", errs[0], tc.err0)
			}
			if !errors.Is(errs[1], tc.errOther) || tc.errOther == nil && errs[1] != nil {
				t.Fatalf("rank 1: %v, want %v", errs[1], tc.errOther)
			}
			for r, rr := range res {
				if rr == nil || rr.Step != tc.step || rr.Interrupted != tc.interr || rr.TimeLimited != tc.timeLim {
					t.Errorf("rank %d: result %+v, want step %d interrupted %v time-limited %v", r, rr, tc.step, tc.interr, tc.timeLim)
				}
			}
			if got := filepath.Base(res[0].Checkpoint); tc.ckpt != "" && got != tc.ckpt {
				t.Errorf("rank 0's checkpoint %q, want %s", res[0].Checkpoint, tc.ckpt)
			}
			if lines := readLines(t, o.Dir); len(lines) != tc.step {
				t.Errorf("%d step lines in metrics.jsonl, want %d (rank 0's alone)", len(lines), tc.step)
			}
			ents, _ := os.ReadDir(filepath.Join(o.Dir, "checkpoints"))
			if tc.ckpt == "" && len(ents) != 0 {
				t.Errorf("checkpoints %v after an observer's stop, want none", ents)
			}
		})
	}
}
