package train

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/checkpoint"
	"github.com/kestrel-lm/kestrel/internal/datasrc"
	"github.com/kestrel-lm/kestrel/internal/optim"
	"github.com/kestrel-lm/kestrel/internal/rewind"
	"github.com/kestrel-lm/kestrel/internal/runlog"
)

// fillRecorder records the tokens the trainer's Fill calls hand out: the
// rows of the current step's batch, in order.
type fillRecorder struct {
	datasrc.Source
	idx int
	cur []int32
}

func (d *fillRecorder) Fill(step, batch, row0, n int, in, tg, sg []int32, srcs []int) error {
	if err := d.Source.Fill(step, batch, row0, n, in, tg, sg, srcs); err != nil {
		return err
	}
	if row0 == 0 {
		d.idx, d.cur = step, d.cur[:0]
	}
	d.cur = append(d.cur, in[:n*d.SeqLen()]...)
	return nil
}

// batchLog is an observer that files the recorder's batch under the
// metrics step that trained on it.
type batchLog struct {
	rec     *fillRecorder
	idx     map[int]int
	batches map[int][]int32
}

func (b *batchLog) OnStep(m *runlog.Step) error {
	b.idx[m.Step], b.batches[m.Step] = b.rec.idx, slices.Clone(b.rec.cur)
	return nil
}
func (*batchLog) OnEval(*runlog.Eval) error             { return nil }
func (*batchLog) OnCheckpoint(*runlog.Checkpoint) error { return nil }

// TestReplayerFollowsRewind: after a rewind to step 4 that skips the
// batches of steps 6–7, the Replayer hands step s the batch the trainer
// itself filled for step s (data step index s+1 from step 6 on), and with
// a z-loss knob from step 9 on, reproduces the logged loss and gradient
// norm of every step on the checkpoint before it; so it does with
// train.parallel_micro_batches = 2 (four micro-batches in two rounds).
func TestReplayerFollowsRewind(t *testing.T) {
	for _, p := range []int{1, 2} {
		t.Run(fmt.Sprint("parallel_micro_batches=", p), func(t *testing.T) { replayerFollowsRewind(t, p) })
	}
}

func replayerFollowsRewind(t *testing.T, p int) {
	dir := filepath.Join(t.TempDir(), "run")
	opts := func(obs ...Observer) Options {
		o := baseOpts(dir)
		if p > 1 {
			o.Train.MicroBatch, o.Train.ParallelMicroBatches = 1, p
		}
		o.Checkpoint.Every, o.Checkpoint.Keep = 1, 20
		zl := 1e-2
		o.Optim.Knobs = []optim.KnobStep{{Step: 9, ZLoss: &zl}}
		o.Observers = obs
		return o
	}
	if _, err := Run(context.Background(), opts()); err != nil {
		t.Fatal(err)
	}
	if _, err := rewind.Rewind(dir, rewind.Options{To: "4", SkipFrom: 6, SkipTo: 7, Reason: "test"}); err != nil {
		t.Fatal(err)
	}
	o := opts()
	rec := &fillRecorder{Source: o.Data}
	log := &batchLog{rec: rec, idx: map[int]int{}, batches: map[int][]int32{}}
	o.Data, o.Observers = rec, []Observer{log}
	if _, err := Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	logged := map[int]runlog.Step{}
	for _, m := range readLines(t, dir) {
		var st runlog.Step
		st.Step = int(num(t, m, "step"))
		st.TrainLossRaw, st.GradGlobalNorm = num(t, m, "train_loss_raw"), num(t, m, "grad_global_norm")
		logged[st.Step] = st
	}
	for s := 5; s <= 12; s++ {
		r, err := NewReplayer(opts(), filepath.Join(dir, "checkpoints", checkpoint.Name(s-1)))
		if err != nil {
			t.Fatal(err)
		}
		if w := r.OffTrajectory(); w != "" {
			t.Errorf("checkpoint %d: %s", s-1, w)
		}
		sr, err := r.Step(s)
		if err != nil {
			t.Fatal(err)
		}
		wantIdx := s - 1
		if s >= 6 {
			wantIdx = s + 1
		}
		if sr.DataIndex != wantIdx || log.idx[s] != wantIdx {
			t.Errorf("step %d: replay data index %d, the trainer's %d, want %d", s, sr.DataIndex, log.idx[s], wantIdx)
		}
		if !slices.Equal(sr.Inputs, log.batches[s]) {
			t.Errorf("step %d: the replayed batch is not the batch the trainer filled", s)
		}
		if l := logged[s]; sr.Loss != l.TrainLossRaw || sr.GradNorm != l.GradGlobalNorm {
			t.Errorf("step %d: replayed loss %v grad norm %v, logged %v %v", s, sr.Loss, sr.GradNorm, l.TrainLossRaw, l.GradGlobalNorm)
		}
	}
	// A checkpoint the rewind moved aside is off the trajectory.
	r, err := NewReplayer(opts(), filepath.Join(dir, rewind.ArchiveDir, "rewind-1", checkpoint.Name(8)))
	if err != nil {
		t.Fatal(err)
	}
	if r.OffTrajectory() == "" {
		t.Error("the abandoned checkpoint of step 8 is said to be on the trajectory")
	}
}
