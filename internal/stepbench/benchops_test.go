package stepbench

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/kestrel-lm/kestrel/internal/kernels"
	"github.com/kestrel-lm/kestrel/internal/model"
)

// TestOpTimes: self times become per-step milliseconds, shares of the step
// (other takes what no span covered), rates against the peak for the ops
// with FLOPs, and for the ops with GEMMs the split of their thread time
// and the micro-kernel's own rate against the peak per thread; largest
// first, ties by name.
func TestOpTimes(t *testing.T) {
	ms := time.Millisecond
	gemm := map[string]kernels.GemmProfile{model.OpQKVGemm: {Pack: 6 * ms, Kernel: 48 * ms, Total: 60 * ms},
		"norm": {Pack: 1 * ms, Kernel: 3 * ms, Total: 4 * ms}}
	tm := &opTimer{self: map[string]time.Duration{model.OpQKVGemm: 30 * ms, "norm": 10 * ms}, gemm: gemm}
	got := passOpTimes([]*opTimer{tm}, nil, 50*ms, 2, map[string]float64{model.OpQKVGemm: 3e9, "norm": 1e9}, 200, 2)
	want := []OpTime{
		// 48 ms of kernel thread time over 2 steps: 3 GFLOP in 24 ms per
		// step, 125 GFLOP/s against 100 per thread.
		{Name: model.OpQKVGemm, MS: 15, PassMS: 15, Share: 0.6, GFLOP: 3, GFLOPS: 200, PctPeak: 1, GemmPack: 0.1, GemmKernel: 0.8, GemmOther: 0.1, KernelPctPeak: 1.25},
		// Not a GEMM op: its FLOPs are not all its GEMMs', so no
		// micro-kernel rate.
		{Name: "norm", MS: 5, PassMS: 5, Share: 0.2, GFLOP: 1, GFLOPS: 200, PctPeak: 1, GemmPack: 0.25, GemmKernel: 0.75},
		{Name: OpOther, MS: 5, Share: 0.2},
	}
	if len(got) != len(want) {
		t.Fatalf("opTimes: %+v", got)
	}
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-12 }
	for i, w := range want {
		g := got[i]
		if g.Name != w.Name || !near(g.MS, w.MS) || !near(g.PassMS, w.PassMS) || !near(g.Share, w.Share) || g.GFLOP != w.GFLOP || !near(g.GFLOPS, w.GFLOPS) ||
			!near(g.PctPeak, w.PctPeak) || !near(g.GemmPack, w.GemmPack) || !near(g.GemmKernel, w.GemmKernel) ||
			!near(g.GemmOther, w.GemmOther) || !near(g.KernelPctPeak, w.KernelPctPeak) {
			t.Errorf("op %d:\n got %+v\nwant %+v", i, g, w)
		}
	}
	// Spans that add up to more than the wall time (clock reads between
	// steps) leave other at zero, never negative.
	tm = &opTimer{self: map[string]time.Duration{"a": 11 * ms}}
	got = passOpTimes([]*opTimer{tm}, nil, 10*ms, 1, nil, 0, 1)
	if got[1].Name != OpOther || got[1].MS != 0 || got[0].PctPeak != 0 || got[0].GemmKernel != 0 {
		t.Errorf("overfull spans: %+v", got)
	}
}

// TestMFUBounds: each bound divides the step's FLOPs by the time of the
// parts it keeps, against the peak; GEMM ops count their kernel share only
// in the last; without a peak or ops every bound is 0.
func TestMFUBounds(t *testing.T) {
	ops := []OpTime{
		{Name: model.OpLMHeadGemm, MS: 50, GFLOP: 8, GemmKernel: 0.8, GemmPack: 0.15, GemmOther: 0.05},
		{Name: model.OpAttnCore, MS: 10, GFLOP: 2},
		{Name: OpOptimizer, MS: 20},
		{Name: model.OpCrossEntropy, MS: 15},
		{Name: OpOther, MS: 5},
	}
	tests := []struct {
		name string
		r    StepBench
		want MFUBounds
	}{
		// 10 GFLOP per step against 200 GFLOP/s: 50 ms at the peak.
		{"ops", StepBench{PeakGFLOPS: 200, Ops: ops}, MFUBounds{Mean: 50.0 / 100, FLOPOpsOptimizer: 50.0 / 80, FLOPOps: 50.0 / 60, Kernels: 50.0 / 50}},
		// Two passes side by side: the ops hold one pass's FLOPs, the
		// step twice them.
		{"parallel", StepBench{PeakGFLOPS: 200, Ops: ops, Parallel: 2}, MFUBounds{Mean: 100.0 / 100, FLOPOpsOptimizer: 100.0 / 80, FLOPOps: 100.0 / 60, Kernels: 100.0 / 50}},
		{"no peak", StepBench{Ops: ops}, MFUBounds{}},
		{"no ops", StepBench{PeakGFLOPS: 200}, MFUBounds{}},
	}
	for _, tc := range tests {
		got := tc.r.Bounds()
		near := func(a, b float64) bool { return math.Abs(a-b) < 1e-12 }
		if !near(got.Mean, tc.want.Mean) || !near(got.FLOPOpsOptimizer, tc.want.FLOPOpsOptimizer) ||
			!near(got.FLOPOps, tc.want.FLOPOps) || !near(got.Kernels, tc.want.Kernels) {
			t.Errorf("%s: got %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

// TestOpTimerNesting: a span's self time, and its GEMMs' profile, exclude
// the spans inside it, and an End without a Begin is ignored.
func TestOpTimerNesting(t *testing.T) {
	defer kernels.SetGemmProfile(kernels.SetGemmProfile(true))
	const n = 96
	a, c := make([]float32, n*n), make([]float32, n*n)
	tm := newOpTimer()
	t0 := time.Now()
	tm.Begin("outer", 0)
	time.Sleep(2 * time.Millisecond)
	tm.Begin("inner", 0)
	kernels.Sgemm(false, false, n, n, n, 1, a, n, a, n, 0, c, n)
	time.Sleep(5 * time.Millisecond)
	tm.End()
	tm.End()
	tm.End()
	wall := time.Since(t0)
	in, out := tm.self["inner"], tm.self["outer"]
	if in < 5*time.Millisecond || out < 2*time.Millisecond || in+out > wall {
		t.Errorf("inner %v, outer %v (self), wall %v", in, out, wall)
	}
	if g, ok := tm.gemm["outer"]; ok || tm.gemm["inner"].Kernel <= 0 || tm.gemm["inner"].Total > in {
		t.Errorf("GEMM profiles: inner %+v, outer %+v (present %v)", tm.gemm["inner"], g, ok)
	}
}

// TestBenchStepOps: with Ops, a benchmarked step is split into the model's
// ops, zero_grads, the optimizer and other; the shares sum to 1, the FLOPs
// are model.OpFLOPs' and sum to the MFU's count; without Ops there are
// none.
func TestBenchStepOps(t *testing.T) {
	cfg := model.Config{Vocab: 64, DModel: 16, NLayers: 2, NHeads: 2, NKVHeads: 2, MLPHidden: 32, SeqLen: 8, RopeTheta: 10000, NormEps: 1e-5, InitStd: 0.02}
	opt := StepBenchOptions{Model: cfg, Batch: 2, Steps: 3, Warmup: 1, PeakGFLOPS: 100, Ops: true}
	r, err := BenchStep(context.Background(), opt)
	if err != nil {
		t.Fatal(err)
	}
	m, err := model.New(cfg, 1)
	if err != nil {
		t.Fatal(err)
	}
	fl := m.OpFLOPs(opt.Batch * cfg.SeqLen)
	seen := map[string]bool{}
	var share, gflop float64
	for _, o := range r.Ops {
		seen[o.Name] = true
		share += o.Share
		gflop += o.GFLOP
		if o.MS < 0 || o.Share < 0 {
			t.Errorf("%s: %v ms, share %v", o.Name, o.MS, o.Share)
		}
		if o.GFLOP != fl[o.Name]/1e9 {
			t.Errorf("%s: %v GFLOP, model.OpFLOPs %v", o.Name, o.GFLOP, fl[o.Name]/1e9)
		}
		if o.GFLOP > 0 && math.Abs(o.PctPeak-o.GFLOPS/100) > 1e-12 {
			t.Errorf("%s: %v GFLOP/s is %v of the 100 GFLOP/s peak", o.Name, o.GFLOPS, o.PctPeak)
		}
		// Every GEMM op splits its GEMMs' thread time and has the
		// micro-kernel's rate; other ops may run GEMMs too (here the
		// attention core, too small for its tile kernels), never the rate.
		gemmOp := model.IsGEMMOp(o.Name)
		if sum := o.GemmPack + o.GemmKernel + o.GemmOther; (gemmOp && o.GemmKernel <= 0) || gemmOp != (o.KernelPctPeak > 0) ||
			(o.GemmKernel > 0 && math.Abs(sum-1) > 1e-9) || o.GemmPack < 0 {
			t.Errorf("%s: GEMM split pack %v kernel %v other %v, kernel %v of peak", o.Name, o.GemmPack, o.GemmKernel, o.GemmOther, o.KernelPctPeak)
		}
	}
	for _, name := range []string{OpZeroGrads, OpOptimizer, OpOther, model.OpEmbedding, model.OpCrossEntropy} {
		if !seen[name] {
			t.Errorf("no %s in %v", name, seen)
		}
	}
	for name := range fl {
		if !seen[name] {
			t.Errorf("op %s has FLOPs but no time", name)
		}
	}
	if math.Abs(share-1) > 1e-9 {
		t.Errorf("shares sum to %v", share)
	}
	if want := r.FLOPsPerToken * float64(opt.Batch*cfg.SeqLen) / 1e9; math.Abs(gflop-want) > 1e-9*want {
		t.Errorf("ops hold %v GFLOP, the step %v", gflop, want)
	}
	for i := 1; i < len(r.Ops); i++ {
		if r.Ops[i].MS > r.Ops[i-1].MS {
			t.Errorf("not largest first: %s %v after %s %v", r.Ops[i].Name, r.Ops[i].MS, r.Ops[i-1].Name, r.Ops[i-1].MS)
		}
	}
	// The bounds rise as less of the step counts, and the mean step's MFU
	// is the FLOPs over the ops' summed time.
	bd := r.Bounds()
	var stepMS float64
	for _, o := range r.Ops {
		stepMS += o.MS
	}
	if want := gflop / (stepMS / 1000) / 100; math.Abs(bd.Mean-want) > 1e-9*want || bd.Mean <= 0 ||
		bd.FLOPOpsOptimizer < bd.Mean || bd.FLOPOps < bd.FLOPOpsOptimizer || bd.Kernels < bd.FLOPOps {
		t.Errorf("bounds %+v, mean-step MFU %v", bd, want)
	}
	// The table and the JSON kestrel bench step prints of r (the ops, the
	// bounds): cmd/kestrel/internal/show.
	opt.Ops = false
	r, err = BenchStep(context.Background(), opt)
	if err != nil || r.Ops != nil {
		t.Fatalf("without Ops: %v ops, err %v", len(r.Ops), err)
	}
	if r.Bounds() != (MFUBounds{}) {
		t.Errorf("without Ops: bounds %+v", r.Bounds())
	}
}

// TestPassOpTimes: with P passes a step (one opTimer each), an op's row is
// the mean of its passes (ms per pass), one pass's FLOPs against one
// thread's peak, and adds to the step PassMS times the passes a thread
// runs one after the other; the parts outside the passes are rows of
// their own and other is the rest, so the shares sum to 1. The GEMM split
// is kept only when the passes did not run at the same time (one thread).
func TestPassOpTimes(t *testing.T) {
	ms := time.Millisecond
	qkv := kernels.GemmProfile{Pack: 2 * ms, Kernel: 16 * ms, Total: 20 * ms}
	timers := func() []*opTimer {
		return []*opTimer{
			{self: map[string]time.Duration{model.OpQKVGemm: 20 * ms}, gemm: map[string]kernels.GemmProfile{model.OpQKVGemm: qkv}},
			{self: map[string]time.Duration{model.OpQKVGemm: 28 * ms}, gemm: map[string]kernels.GemmProfile{model.OpQKVGemm: qkv}},
		}
	}
	outside := map[string]time.Duration{OpFold: 4 * ms, OpOptimizer: 6 * ms}
	fl := map[string]float64{model.OpQKVGemm: 1e9} // one pass
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	for _, tc := range []struct {
		threads               int
		total                 time.Duration // 2 steps
		qkvMS, otherMS, pctPk float64
		kernel, kernelPctPeak float64
	}{
		// One thread: the passes take turns, 12 ms per pass, 24 ms of the
		// step; 1 GFLOP in 12 ms is 83.3 GFLOP/s of a 100 GFLOP/s thread.
		// Kernel: 32 ms over 4 passes, 8 ms a pass: 125 GFLOP/s.
		{threads: 1, total: 60 * ms, qkvMS: 24, otherMS: 1, pctPk: 1 / 0.012 / 100, kernel: 0.8, kernelPctPeak: 1.25},
		// Two threads, a pass on each: the op adds one pass to the step;
		// the peak of 200 GFLOP/s is 100 per thread; no GEMM split.
		{threads: 2, total: 40 * ms, qkvMS: 12, otherMS: 3, pctPk: 1 / 0.012 / 100},
	} {
		peak := 100 * float64(tc.threads)
		got := passOpTimes(timers(), outside, tc.total, 2, fl, peak, tc.threads)
		rows := map[string]OpTime{}
		var share float64
		for _, o := range got {
			rows[o.Name] = o
			share += o.Share
		}
		q := rows[model.OpQKVGemm]
		if !near(q.PassMS, 12) || !near(q.MS, tc.qkvMS) || q.GFLOP != 1 || !near(q.PctPeak, tc.pctPk) ||
			!near(q.GemmKernel, tc.kernel) || !near(q.KernelPctPeak, tc.kernelPctPeak) {
			t.Errorf("%d threads: qkv %+v", tc.threads, q)
		}
		if o, f := rows[OpOther], rows[OpFold]; !near(o.MS, tc.otherMS) || !near(f.MS, 2) || f.PassMS != 0 || f.GFLOP != 0 {
			t.Errorf("%d threads: other %+v, fold %+v", tc.threads, o, f)
		}
		if !near(share, 1) || len(got) != 4 {
			t.Errorf("%d threads: %d rows, shares sum to %v: %+v", tc.threads, len(got), share, got)
		}
	}
}

// TestBenchStepOpsParallel: kestrel bench step --ops of a run with
// train.parallel_micro_batches = 2 at the shakespeare-char shapes, on 1
// and 2 threads: every replica's pass is traced (other stays small, the
// fold has its row), each op holds one pass's FLOPs and reads at most the
// peak of the one thread its pass runs on, the shares sum to 1 and the
// ops' FLOPs, times the passes, are the step's.
func TestBenchStepOpsParallel(t *testing.T) {
	if testing.Short() {
		t.Skip("times steps")
	}
	cfg := model.Config{Vocab: 256, DModel: 128, NLayers: 4, NHeads: 4, NKVHeads: 4, MLPHidden: 384, SeqLen: 64,
		RopeTheta: 10000, NormEps: 1e-5, InitStd: 0.02, Tied: true}
	m, err := model.New(cfg, 1)
	if err != nil {
		t.Fatal(err)
	}
	fl := m.OpFLOPs(6 * cfg.SeqLen)
	prev := kernels.Threads()
	defer kernels.SetThreads(prev)
	for _, threads := range []int{1, 2} {
		kernels.SetThreads(threads)
		// The peak of these threads: one core's, the best of a few
		// 1-thread probes (a probe that shares its core reads low), times
		// the threads, so no op can read above it by chance.
		var core float64
		for range 5 {
			core = max(core, kernels.PeakGFLOPS(1, 20*time.Millisecond))
		}
		peak := core * float64(threads)
		opt := StepBenchOptions{Model: cfg, Batch: 6, Parallel: 2, Steps: 3, Warmup: 1, PeakGFLOPS: peak, Ops: true}
		r, err := BenchStep(context.Background(), opt)
		if err != nil {
			t.Fatal(err)
		}
		// Probed again after the steps: the best of all readings is the
		// core's peak, even if the first probes shared their core.
		best := core
		for range 3 {
			best = max(best, kernels.PeakGFLOPS(1, 20*time.Millisecond))
		}
		rows := map[string]OpTime{}
		var share, gflop float64
		for _, o := range r.Ops {
			rows[o.Name] = o
			share += o.Share
			gflop += o.GFLOP
			if o.GFLOP != fl[o.Name]/1e9 {
				t.Errorf("%d threads: %s holds %v GFLOP, one pass %v", threads, o.Name, o.GFLOP, fl[o.Name]/1e9)
			}
			if o.GFLOPS > best || o.KernelPctPeak*core > best {
				t.Errorf("%d threads: %s reads %.0f%% of the peak (micro-kernel %.0f%%)", threads, o.Name, 100*o.PctPeak, 100*o.KernelPctPeak)
			}
			if o.GFLOP > 0 && math.Abs(o.PctPeak-o.GFLOP/(o.PassMS/1000)/(peak/float64(threads))) > 1e-9 {
				t.Errorf("%d threads: %s: %v of peak, not one pass's rate on one thread", threads, o.Name, o.PctPeak)
			}
		}
		for _, name := range []string{OpFold, OpOptimizer, OpZeroGrads, OpOther, model.OpQKVGemm + model.OpBackwardSuffix} {
			if _, ok := rows[name]; !ok {
				t.Errorf("%d threads: no %s row", threads, name)
			}
		}
		if math.Abs(share-1) > 1e-9 {
			t.Errorf("%d threads: shares sum to %v", threads, share)
		}
		// The second replica's pass is no longer "other": what is left is
		// the pool's dispatch and clock reads, and on two threads the
		// time the faster pass waits for the slower (more where another
		// process shares a core).
		if o := rows[OpOther]; o.Share > []float64{0.2, 0.45}[threads-1] {
			t.Errorf("%d threads: other is %.1f%% of the step", threads, 100*o.Share)
		}
		if want := r.FLOPsPerToken * float64(6*cfg.SeqLen) / 1e9; math.Abs(gflop-want) > 1e-9*want {
			t.Errorf("%d threads: the ops hold %v GFLOP a pass, a pass is %v", threads, gflop, want)
		}
	}
}
