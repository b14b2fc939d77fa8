package train

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/comm"
	"github.com/kestrel-lm/kestrel/internal/datasrc"
	"github.com/kestrel-lm/kestrel/internal/kernels"
)

// runDP trains o on n in-process ranks (comm.Local) and returns rank 0's
// result and every rank's error.
func runDP(t *testing.T, o Options, n int) (*Result, []error) {
	t.Helper()
	cs := comm.Local(n)
	errs := make([]error, n)
	var res *Result
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
		wg.Add(1)
		go func() {
			defer wg.Done()
			rr, err := Run(context.Background(), oo)
			errs[r] = err
			if r == 0 {
				res = rr
			}
		}()
	}
	wg.Wait()
	return res, errs
}

func stepFloats(t *testing.T, dir, key string) []float64 {
	t.Helper()
	var out []float64
	for _, l := range readLines(t, dir) {
		raw, ok := l[key]
		if !ok {
			t.Fatalf("%s: step line without %s", dir, key)
		}
		x, err := strconv.ParseFloat(string(raw), 64)
		if err != nil {
			t.Fatalf("%s: %s = %s: %v", dir, key, raw, err)
		}
		out = append(out, x)
	}
	return out
}

// TestDataParallelEquality: N ranks with global batch B train as one
// process with micro_batch = B/N does: train_loss_raw within 1e-6
// relative at every step, bit-identical at the first (the same rows, the
// same weights). Not bit-identical later: a single process's backward
// accumulates the second micro-batch's weight gradient into the first's
// inside the GEMM (g0 + Σ terms), a rank starts from zero and the
// all-reduce adds the two afterwards (g0 + (Σ terms)) — a different
// rounding of the same sum.
func TestDataParallelEquality(t *testing.T) {
	defer kernels.SetThreads(kernels.Threads())
	kernels.SetThreads(1)
	tests := []struct {
		ranks, batch, micro int
		sched               [][]int
	}{
		{2, 4, 2, nil},
		{2, 6, 3, nil},
		{3, 6, 2, nil},
		{2, 4, 1, nil},                     // two micro-batches per rank
		{2, 4, 2, [][]int{{1, 4}, {4, 6}}}, // a batch-size schedule: shares follow it
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("ranks%d_B%d_mb%d_sched%v", tt.ranks, tt.batch, tt.micro, tt.sched), func(t *testing.T) {
			one := baseOpts(filepath.Join(t.TempDir(), "one"))
			one.Train.Steps, one.Train.BatchSize, one.Train.MicroBatch = 8, tt.batch, tt.micro
			one.Train.BatchSchedule = tt.sched
			one.Checkpoint.Every = 4
			if _, err := Run(context.Background(), one); err != nil {
				t.Fatal(err)
			}
			dp := one
			dp.Dir = filepath.Join(t.TempDir(), "dp")
			dp.Train.MicroBatch = tt.micro
			if _, errs := runDP(t, dp, tt.ranks); errs != nil {
				for r, err := range errs {
					if err != nil {
						t.Fatalf("rank %d: %v", r, err)
					}
				}
			}
			a, b := stepFloats(t, one.Dir, "train_loss_raw"), stepFloats(t, dp.Dir, "train_loss_raw")
			if len(a) != len(b) || len(a) != 8 {
				t.Fatalf("steps: %d single, %d data-parallel", len(a), len(b))
			}
			worst := 0.0
			for i := range a {
				rel := math.Abs(a[i]-b[i]) / math.Abs(a[i])
				worst = max(worst, rel)
				if i == 0 && a[i] != b[i] {
					t.Errorf("step 1: train_loss_raw %v single, %v on %d ranks (want bit-identical)", a[i], b[i], tt.ranks)
				}
				if rel > 1e-6 {
					t.Errorf("step %d: train_loss_raw %v single, %v on %d ranks: relative difference %.3g > 1e-6", i+1, a[i], b[i], tt.ranks, rel)
				}
			}
			t.Logf("worst relative difference of train_loss_raw over %d steps: %.3g", len(a), worst)
			g := stepFloats(t, dp.Dir, "straggler_ratio")
			if !(g[0] >= 1) {
				t.Errorf("straggler_ratio %v, want ≥ 1", g[0])
			}
			if by := stepFloats(t, dp.Dir, "allreduce_bytes"); by[0] <= 0 {
				t.Errorf("allreduce_bytes %v", by[0])
			}
		})
	}
}

// TestDataParallelResumeOtherRankCount: a run checkpointed on 2 ranks
// resumes on 3 and on 1 and follows the single-process run (the batch order
// does not depend on the number of ranks).
func TestDataParallelResumeOtherRankCount(t *testing.T) {
	defer kernels.SetThreads(kernels.Threads())
	kernels.SetThreads(1)
	one := baseOpts(filepath.Join(t.TempDir(), "one"))
	one.Train.Steps, one.Train.BatchSize, one.Train.MicroBatch = 8, 6, 2
	one.Checkpoint.Every = 4
	if _, err := Run(context.Background(), one); err != nil {
		t.Fatal(err)
	}
	want := stepFloats(t, one.Dir, "train_loss_raw")
	for _, then := range []int{3, 1} {
		t.Run(fmt.Sprintf("2then%d", then), func(t *testing.T) {
			o := one
			o.Dir = filepath.Join(t.TempDir(), "dp")
			o.Train.Steps = 4
			for r, err := range must2(runDP(t, o, 2)) {
				if err != nil {
					t.Fatalf("first leg, rank %d: %v", r, err)
				}
			}
			o.Train.Steps = 8
			if then == 1 {
				if _, err := Run(context.Background(), o); err != nil {
					t.Fatal(err)
				}
			} else {
				for r, err := range must2(runDP(t, o, then)) {
					if err != nil {
						t.Fatalf("second leg, rank %d: %v", r, err)
					}
				}
			}
			got := stepFloats(t, o.Dir, "train_loss_raw")
			if len(got) != len(want) {
				t.Fatalf("%d steps, want %d", len(got), len(want))
			}
			for i := range want {
				if rel := math.Abs(got[i]-want[i]) / want[i]; rel > 1e-6 {
					t.Errorf("step %d: train_loss_raw %v, single process %v (relative %.3g)", i+1, got[i], want[i], rel)
				}
			}
		})
	}
}

func must2(_ *Result, errs []error) []error { return errs }

// TestDataParallelHang: a rank that never reaches the step's collectives
// makes the others' wait time out with a comm.HangError naming it.
func TestDataParallelHang(t *testing.T) {
	defer kernels.SetThreads(kernels.Threads())
	kernels.SetThreads(1)
	o := baseOpts(filepath.Join(t.TempDir(), "dp"))
	o.Train.Steps, o.Train.CommTimeoutSeconds = 6, 0.3
	o.Debug.HangAtStep, o.Debug.HangRank = 3, 1
	ctx, cancel := context.WithCancel(context.Background())
	cs := comm.Local(2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for r, c := range cs {
		oo := o
		oo.Comm = c
		data := corpus()
		k := len(data) * 9 / 10
		oo.Data = datasrc.NewBytesSource(data[:k], data[k:], 32, 42)
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[r] = Run(ctx, oo)
			if r == 0 {
				cancel() // what the launcher's abort does to the hung rank
			}
		}()
	}
	wg.Wait()
	cancel()
	var he *comm.HangError
	if !errors.As(errs[0], &he) || len(he.Missing) != 1 || he.Missing[0] != 1 {
		t.Fatalf("rank 0: %v, want a HangError naming rank 1", errs[0])
	}
	if !strings.Contains(errs[0].Error(), "step 3") {
		t.Errorf("rank 0: %v, want the step named", errs[0])
	}
}

func TestRankMetrics(t *testing.T) {
	tests := []struct {
		steps     []float64
		ratio     float64
		slowRank  int
		bytes     int64
		wantRanks float64
	}{
		{[]float64{1, 1}, 1, 0, 8, 2},
		{[]float64{1, 3}, 1.5, 1, 8, 2}, // median of two is their mean
		{[]float64{1, 1, 4}, 4, 2, 4, 3},
		{[]float64{2, 1, 1, 1}, 2, 0, 4, 4},
	}
	for _, tt := range tests {
		ts := make([]rankTimes, len(tt.steps))
		for r, x := range tt.steps {
			ts[r] = rankTimes{Step: x, Compute: x / 2}
		}
		per := map[string]float64{}
		rankMetrics(per, ts, tt.bytes)
		if per["straggler_ratio"] != tt.ratio || per["straggler_rank"] != float64(tt.slowRank) || per["ranks"] != tt.wantRanks || per["allreduce_bytes"] != float64(tt.bytes) {
			t.Errorf("%v: %v", tt.steps, per)
		}
		if last := fmt.Sprintf("rank_step_time/rank%d", len(tt.steps)-1); per[last] != tt.steps[len(tt.steps)-1] {
			t.Errorf("%v: %s = %v", tt.steps, last, per[last])
		}
	}
}
