package train

import (
	"bytes"
	"context"
	"log/slog"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/checkpoint"
	"github.com/kestrel-lm/kestrel/internal/datasrc"
	"github.com/kestrel-lm/kestrel/internal/kernels"
)

// TestParallelMicroBatchesInARun: with train.parallel_micro_batches = 2
// (two micro-batches of 2 rows, one per replica) a run's losses and
// weights are the same bits on one kernel thread as on two; against the
// sequential accumulation (1) the first step's loss is the same bits (a
// pass's loss does not depend on the order of accumulation), its gradient
// norm agrees to float rounding but not bit for bit (the mode is on: the
// replicas' sum is another order of summation), the losses stay within
// rounding's drift, and the noise scale, measured on each replica's
// gradient directly, stays finite and close to the sequential estimate.
func TestParallelMicroBatchesInARun(t *testing.T) {
	opts := func(dir string, p int) Options {
		o := baseOpts(dir)
		o.Train.MicroBatch, o.Train.ParallelMicroBatches = 2, p
		return o
	}
	run := func(p, threads int) string {
		defer kernels.SetThreads(kernels.Threads())
		kernels.SetThreads(threads)
		dir := filepath.Join(t.TempDir(), "run")
		if _, err := Run(context.Background(), opts(dir, p)); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	one, two, seq := run(2, 1), run(2, 2), run(1, 2)
	if a, b := lossSeq(t, one), lossSeq(t, two); !slices.Equal(a, b) {
		t.Errorf("P=2: losses on 1 thread %v, on 2 %v", a, b)
	}
	ck := checkpoint.Name(12)
	if fileSum(t, filepath.Join(one, "checkpoints", ck), checkpoint.ModelFile) != fileSum(t, filepath.Join(two, "checkpoints", ck), checkpoint.ModelFile) {
		t.Error("P=2: the weights after 12 steps differ between 1 and 2 threads")
	}
	names := []string{"train_loss_raw", "grad_global_norm", "grad_noise_scale", "forward_time", "backward_time"}
	got, want := stepValues(t, two, names...), stepValues(t, seq, names...)
	if got[0]["train_loss_raw"] != want[0]["train_loss_raw"] {
		t.Errorf("step 1 loss %v, sequential %v", got[0]["train_loss_raw"], want[0]["train_loss_raw"])
	}
	g, w := got[0]["grad_global_norm"], want[0]["grad_global_norm"]
	if g == w || math.Abs(g-w) > 1e-5*w {
		t.Errorf("step 1 grad_global_norm %v, sequential %v: want different bits within 1e-5", g, w)
	}
	noisy := 0
	for i := range want {
		if a, b := got[i]["train_loss_raw"], want[i]["train_loss_raw"]; math.Abs(a-b) > 1e-3*b {
			t.Errorf("step %d: loss %v, sequential %v", i+1, a, b)
		}
		if got[i]["forward_time"] <= 0 || got[i]["backward_time"] <= 0 {
			t.Errorf("step %d: forward_time %v backward_time %v", i+1, got[i]["forward_time"], got[i]["backward_time"])
		}
		a, okA := got[i]["grad_noise_scale"]
		b, okB := want[i]["grad_noise_scale"]
		if okA != okB {
			t.Fatalf("step %d: grad_noise_scale present %v, sequentially %v", i+1, okA, okB)
		}
		if okA {
			noisy++
			if math.IsNaN(a) || math.IsInf(a, 0) || math.Abs(a-b) > 1e-2*math.Abs(b) {
				t.Errorf("step %d: grad_noise_scale %v, sequential %v", i+1, a, b)
			}
		}
	}
	if noisy == 0 {
		t.Error("no step measured the noise scale")
	}
}

// TestParallelMicroBatchesFallBack: an MoE model runs its micro-batches
// one after the other, bit-identical to parallel_micro_batches = 1, with
// one log line saying why.
func TestParallelMicroBatchesFallBack(t *testing.T) {
	runs := map[int][]string{}
	for _, p := range []int{1, 2} {
		dir := filepath.Join(t.TempDir(), "run")
		o := baseOpts(dir)
		o.Train.Steps, o.Train.MicroBatch, o.Train.ParallelMicroBatches = 3, 2, p
		o.Model = moeModel("aux")
		var log bytes.Buffer
		o.Logger = slog.New(slog.NewTextHandler(&log, nil))
		if _, err := Run(context.Background(), o); err != nil {
			t.Fatal(err)
		}
		runs[p] = lossSeq(t, dir)
		if n := strings.Count(log.String(), "parallel_micro_batches"); (p == 2) != (n == 2) || !(p == 2) && n != 0 {
			t.Errorf("P=%d: %d mentions of parallel_micro_batches in the log, want one line (msg and key): %s", p, n, log.String())
		}
		if p == 2 && !strings.Contains(log.String(), "mixture-of-experts") {
			t.Errorf("P=2: the log line does not say why: %s", log.String())
		}
	}
	if !slices.Equal(runs[1], runs[2]) {
		t.Errorf("MoE with parallel_micro_batches = 2 %v, with 1 %v", runs[2], runs[1])
	}
}

// TestParallelMicroBatchesEval: with parallel_micro_batches = 2 the
// validation batches run side by side on the replicas, and every
// evaluation — val_loss, val_loss_ema, each source's slice, the tokens —
// is the same bits as the same run's weights scored one batch after the
// other: in-loop evaluations of one round with a short last batch, and
// the final one over every validation row; on one thread and on two; in
// fp32 and bf16.
func TestParallelMicroBatchesEval(t *testing.T) {
	run := func(sideBySide bool, threads int, prec string) string {
		defer func(v bool, n int) { sideBySideEval = v; kernels.SetThreads(n) }(sideBySideEval, kernels.Threads())
		sideBySideEval = sideBySide
		kernels.SetThreads(threads)
		dir := filepath.Join(t.TempDir(), "run")
		o := baseOpts(dir)
		o.Train.Steps, o.Train.EvalEvery, o.Train.MicroBatch, o.Train.ParallelMicroBatches, o.Train.Precision = 6, 3, 3, 2, prec
		o.Data = weighted{&heldOut{BytesSource: o.Data.(*datasrc.BytesSource), weights: []float64{3, 1}}}
		if _, err := Run(context.Background(), o); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	keys := []string{"val_loss", "val_loss_ema", "val_tokens", "slice_val_loss/a", "slice_val_loss/b"}
	for _, prec := range []string{"fp32", "bf16"} {
		want := metricLines(t, run(false, 2, prec), "val_loss")
		if len(want) != 2 || want[1]["val_tokens"] <= want[0]["val_tokens"] {
			t.Fatalf("%s: evaluations %v: want 2, the last over every row", prec, want)
		}
		for _, threads := range []int{1, 2} {
			got := metricLines(t, run(true, threads, prec), "val_loss")
			if len(got) != len(want) {
				t.Fatalf("%s, %d threads: %d evaluations side by side, %d one after the other", prec, threads, len(got), len(want))
			}
			for i := range want {
				for _, k := range keys {
					a, okA := got[i][k]
					b, okB := want[i][k]
					if !okA || !okB || a != b || math.IsNaN(a) {
						t.Errorf("%s, %d threads: evaluation %d %s = %v side by side, %v one after the other", prec, threads, i, k, a, b)
					}
				}
			}
		}
	}
}

// TestSideBySideFit: the start-up warning names what P replicas leave
// idle (threads, micro-batches) and says nothing when they fit.
func TestSideBySideFit(t *testing.T) {
	for _, c := range []struct {
		p, threads, micro int
		want              string
	}{
		{2, 2, 2, ""}, {2, 2, 8, ""}, {4, 4, 4, ""},
		{2, 8, 2, "on 2 of the 8 threads"},
		{2, 1, 2, "2 passes share the 1 thread(s)"},
		{4, 4, 2, "so 2 of the 4 replicas never run"},
		{4, 16, 1, "so 3 of the 4 replicas never run"},
	} {
		got := sideBySideFit(c.p, c.threads, c.micro)
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("P %d, %d threads, %d micro-batches: %q, want %q", c.p, c.threads, c.micro, got, c.want)
		}
	}
}
