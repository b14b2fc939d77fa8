package train

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/checkpoint"
	"github.com/kestrel-lm/kestrel/internal/datasrc"
	"github.com/kestrel-lm/kestrel/internal/kernels"
	"github.com/kestrel-lm/kestrel/internal/kernels/ops"
	"github.com/kestrel-lm/kestrel/internal/optim"
)

// docSource gives the byte source's rows document segments: a new one
// after every newline, so doc_mask cuts attention inside a row.
type docSource struct{ *datasrc.BytesSource }

func (s docSource) Fill(step, batch, row0, n int, in, tg, sg []int32, srcs []int) error {
	if err := s.BytesSource.Fill(step, batch, row0, n, in, tg, sg, srcs); err != nil {
		return err
	}
	segment(in[:n*s.SeqLen()], sg, s.SeqLen())
	return nil
}

func (s docSource) FillVal(src, row0, n int, in, tg, sg []int32) error {
	if err := s.BytesSource.FillVal(src, row0, n, in, tg, sg); err != nil {
		return err
	}
	segment(in[:n*s.SeqLen()], sg, s.SeqLen())
	return nil
}

func segment(in, sg []int32, T int) {
	if sg == nil {
		return
	}
	for r := 0; r < len(in)/T; r++ {
		id := int32(0)
		for i := r * T; i < (r+1)*T; i++ {
			sg[i] = id
			if in[i] == '\n' {
				id++
			}
		}
	}
}

// TestParallelMicroBatchesEdges: parallel_micro_batches = 2 with each
// setting that changes what a pass computes or what a step holds — a
// batch ramp whose first steps have one micro-batch (fewer than the
// replicas), bf16, doc_mask, z-loss knobs set at step 1 and changed mid
// run, the [debug] NaN and poisoned-data faults — gives the same bits on
// one kernel thread as on two (losses, evaluations, final weights), step
// 1's loss the sequential run's bit for bit, and every step's loss within
// float rounding's drift of the sequential run (a knob, mask, precision or
// fault that missed the second replica moves it far more); then each
// case's own check.
func TestParallelMicroBatchesEdges(t *testing.T) {
	t.Setenv(ops.BF16ReferenceEnv, "1")
	f := func(x float64) *float64 { return &x }
	cases := []struct {
		name  string
		set   func(o *Options)
		nanAt int // the step a NaN stops the run at (0: it ends)
		check func(t *testing.T, p2, p1 string)
	}{
		{"batch ramp", func(o *Options) { o.Train.BatchSchedule = [][]int{{1, 2}, {4, 4}} }, 0, func(t *testing.T, p2, p1 string) {
			names := []string{"train_loss_raw", "grad_global_norm", "grad_noise_scale"}
			a, b := stepValues(t, p2, names...), stepValues(t, p1, names...)
			for i := range 3 { // one micro-batch: replica 0 alone, the sequential step bit for bit
				if a[i]["grad_global_norm"] != b[i]["grad_global_norm"] || a[i]["train_loss_raw"] != b[i]["train_loss_raw"] {
					t.Errorf("step %d (one micro-batch): %v, sequential %v", i+1, a[i], b[i])
				}
				if _, ok := a[i]["grad_noise_scale"]; ok {
					t.Errorf("step %d (one micro-batch): a noise scale %v", i+1, a[i]["grad_noise_scale"])
				}
			}
			if a[3]["train_loss_raw"] != b[3]["train_loss_raw"] { // the same weights after three such steps
				t.Errorf("step 4 loss %v, sequential %v", a[3]["train_loss_raw"], b[3]["train_loss_raw"])
			}
			if g, w := a[3]["grad_global_norm"], b[3]["grad_global_norm"]; g == w || math.Abs(g-w) > 1e-5*w {
				t.Errorf("step 4 (two micro-batches) grad_global_norm %v, sequential %v: want different bits within 1e-5", g, w)
			}
		}},
		{"bf16", func(o *Options) { o.Train.Precision = "bf16" }, 0, nil},
		{"doc_mask", func(o *Options) {
			o.Model.DocMask = true
			o.Data = docSource{o.Data.(*datasrc.BytesSource)}
		}, 0, func(t *testing.T, p2, _ string) {
			o := baseOpts(filepath.Join(t.TempDir(), "run"))
			o.Train.Steps, o.Train.MicroBatch, o.Train.ParallelMicroBatches = 2, 2, 2
			o.Data = docSource{o.Data.(*datasrc.BytesSource)}
			if _, err := Run(context.Background(), o); err != nil {
				t.Fatal(err)
			}
			if a, b := lossSeq(t, p2)[0], lossSeq(t, o.Dir)[0]; a == b {
				t.Errorf("step 1 loss %s with doc_mask, %s without: the mask cuts nothing, the case proves nothing", a, b)
			}
		}},
		{"z-loss knobs", func(o *Options) {
			o.Model.ZLoss = 0
			o.Optim.Knobs = []optim.KnobStep{{Step: 1, ZLoss: f(0.05)}, {Step: 5, ZLoss: f(0.2)}}
		}, 0, func(t *testing.T, p2, _ string) {
			// the same run with the first weight as model.z_loss: the replicas followed the knob from step 1
			o := baseOpts(filepath.Join(t.TempDir(), "run"))
			o.Train.Steps, o.Train.MicroBatch, o.Train.ParallelMicroBatches = 8, 2, 2
			o.Model.ZLoss, o.Optim.Knobs = 0.05, []optim.KnobStep{{Step: 5, ZLoss: f(0.2)}}
			if _, err := Run(context.Background(), o); err != nil {
				t.Fatal(err)
			}
			if a, b := lossSeq(t, p2), lossSeq(t, o.Dir); !slices.Equal(a, b) {
				t.Errorf("z-loss from a knob at step 1: %v; as model.z_loss: %v", a, b)
			}
			if a, b := stepValues(t, p2, "z_loss"), stepValues(t, o.Dir, "z_loss"); !slices.EqualFunc(a, b, func(x, y map[string]float64) bool { return x["z_loss"] == y["z_loss"] && x["z_loss"] > 0 }) {
				t.Errorf("z_loss %v; as model.z_loss: %v", a, b)
			}
		}},
		{"nan fault", func(o *Options) { o.Debug.NaNAtStep = 3 }, 3, nil},
		{"poisoned data", func(o *Options) { o.Debug.PoisonDataAtStep, o.Debug.PoisonDataSteps = 5, 2 }, 0, func(t *testing.T, p2, _ string) {
			l := stepValues(t, p2, "train_loss_raw")
			if !(l[4]["train_loss_raw"] > l[3]["train_loss_raw"]+0.2) {
				t.Errorf("losses %v: the poisoned step 5 is no worse, the case proves nothing", l)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			run := func(p, threads int) string {
				defer kernels.SetThreads(kernels.Threads())
				kernels.SetThreads(threads)
				o := baseOpts(filepath.Join(t.TempDir(), "run"))
				o.Train.Steps, o.Train.MicroBatch, o.Train.ParallelMicroBatches, o.Train.EvalEvery = 8, 2, p, 4
				c.set(&o)
				var log bytes.Buffer
				o.Logger = slog.New(slog.NewTextHandler(&log, nil))
				_, err := Run(context.Background(), o)
				var ne *NaNError
				switch {
				case c.nanAt > 0 && (!errors.As(err, &ne) || ne.Step != c.nanAt):
					t.Fatalf("P=%d: want a NaN stop at step %d, got %v", p, c.nanAt, err)
				case c.nanAt == 0 && err != nil:
					t.Fatal(err)
				}
				if p > 1 && strings.Contains(log.String(), "one after the other") { // the mode fell back
					t.Fatalf("P=%d: %s", p, log.String())
				}
				return o.Dir
			}
			one, two, seq := run(2, 1), run(2, 2), run(1, 2)
			if a, b := lossSeq(t, one), lossSeq(t, two); !slices.Equal(a, b) || len(a) == 0 {
				t.Errorf("P=2: losses on 1 thread %v, on 2 %v", a, b)
			}
			if a, b := metricLines(t, one, "val_loss"), metricLines(t, two, "val_loss"); !slices.EqualFunc(a, b, func(x, y map[string]float64) bool { return x["val_loss"] == y["val_loss"] }) {
				t.Errorf("P=2: evaluations on 1 thread %v, on 2 %v", a, b)
			}
			if c.nanAt == 0 {
				ck := filepath.Join("checkpoints", checkpoint.Name(8))
				if fileSum(t, filepath.Join(one, ck), checkpoint.ModelFile) != fileSum(t, filepath.Join(two, ck), checkpoint.ModelFile) {
					t.Error("P=2: the weights after 8 steps differ between 1 and 2 threads")
				}
			}
			got, want := stepValues(t, two, "train_loss_raw"), stepValues(t, seq, "train_loss_raw")
			if len(got) != len(want) || len(got) == 0 {
				t.Fatalf("%d steps, sequentially %d", len(got), len(want))
			}
			for i := range want {
				a, b := got[i]["train_loss_raw"], want[i]["train_loss_raw"]
				if i == 0 && a != b || math.Abs(a-b) > 1e-3*b {
					t.Errorf("step %d: loss %v, sequential %v", i+1, a, b)
				}
			}
			if c.check != nil {
				c.check(t, two, seq)
			}
		})
	}
}

// TestParallelMicroBatchesDataParallel: a data-parallel run asked for
// parallel_micro_batches = 2 accumulates in one model on each rank, the
// same bits as asking for 1, and its log says why.
func TestParallelMicroBatchesDataParallel(t *testing.T) {
	defer kernels.SetThreads(kernels.Threads())
	kernels.SetThreads(1)
	runs := map[int][]string{}
	for _, p := range []int{1, 2} {
		o := baseOpts(filepath.Join(t.TempDir(), "run"))
		o.Train.Steps, o.Train.BatchSize, o.Train.MicroBatch, o.Train.ParallelMicroBatches = 4, 8, 2, p
		var log syncBuffer
		o.Logger = slog.New(slog.NewTextHandler(&log, nil))
		if _, errs := runDP(t, o, 2); errors.Join(errs...) != nil {
			t.Fatal(errors.Join(errs...))
		}
		runs[p] = lossSeq(t, o.Dir)
		n := strings.Count(log.String(), "a data-parallel run accumulates in one model")
		if p == 2 && n == 0 || p == 1 && n != 0 {
			t.Errorf("P=%d: %d log lines on the data-parallel fallback: %s", p, n, log.String())
		}
	}
	if !slices.Equal(runs[1], runs[2]) || len(runs[1]) != 4 {
		t.Errorf("data-parallel with parallel_micro_batches = 2 %v, with 1 %v", runs[2], runs[1])
	}
}

// syncBuffer is a bytes.Buffer the ranks' loggers write at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
