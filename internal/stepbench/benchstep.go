package stepbench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"runtime/debug"
	"sort"
	"time"

	"github.com/kestrel-lm/kestrel/internal/kernels"
	"github.com/kestrel-lm/kestrel/internal/kernels/ops"
	"github.com/kestrel-lm/kestrel/internal/model"
	"github.com/kestrel-lm/kestrel/internal/optim"
	"github.com/kestrel-lm/kestrel/internal/peak"
	"github.com/kestrel-lm/kestrel/internal/replicas"
	"github.com/kestrel-lm/kestrel/internal/train"
)

// Ref7mConfig is the reference model of the step benchmark: vocab 8192,
// d_model 256, 4 layers, 4 heads, 4 kv heads, SwiGLU 768, seq 256, untied,
// RMSNorm, RoPE θ 10000 — 7.6M parameters.
func Ref7mConfig() model.Config {
	return model.Config{Vocab: 8192, DModel: 256, NLayers: 4, NHeads: 4, NKVHeads: 4, MLPHidden: 768,
		SeqLen: 256, RopeTheta: 10000, NormEps: 1e-5, InitStd: 0.02}
}

// StepPreset is a model and micro-batch of the step benchmark.
type StepPreset struct {
	Name  string
	Model model.Config
	Batch int // sequences per step
	Note  string
}

// StepPresets are the models `kestrel bench step --preset` knows, smallest
// first: ref7m (the reference, 7.6M parameters), 30m (d_model 512, 6
// layers, 28.8M) and 124m (a GPT-2-small-sized Llama: d_model 768, 12
// layers, 12 heads, SwiGLU 2048, GPT-2's vocabulary padded to 50304 as
// llm.c pads it, tied embeddings, 123.6M; seq 256 × batch 4 so that a step
// takes seconds, not minutes, on two cores).
func StepPresets() []StepPreset {
	return []StepPreset{
		{Name: "ref7m", Model: Ref7mConfig(), Batch: 8, Note: "vocab 8192, d 256, 4 layers, seq 256, batch 8"},
		{Name: "30m", Model: model.Config{Vocab: 8192, DModel: 512, NLayers: 6, NHeads: 8, NKVHeads: 8, MLPHidden: 1536,
			SeqLen: 256, RopeTheta: 10000, NormEps: 1e-5, InitStd: 0.02}, Batch: 8, Note: "vocab 8192, d 512, 6 layers, seq 256, batch 8"},
		{Name: "124m", Model: model.Config{Vocab: 50304, DModel: 768, NLayers: 12, NHeads: 12, NKVHeads: 12, MLPHidden: 2048,
			SeqLen: 256, RopeTheta: 10000, NormEps: 1e-5, InitStd: 0.02, Tied: true}, Batch: 4, Note: "vocab 50304 tied, d 768, 12 layers, seq 256, batch 4"},
	}
}

// LookupStepPreset returns the preset named name, or an error listing the
// known ones.
func LookupStepPreset(name string) (StepPreset, error) {
	var names []string
	for _, p := range StepPresets() {
		if p.Name == name {
			return p, nil
		}
		names = append(names, p.Name)
	}
	return StepPreset{}, fmt.Errorf("bench step: unknown --preset %q (known: %v)", name, names)
}

// StepBenchOptions configure BenchStep.
type StepBenchOptions struct {
	Model  model.Config // the model (Ref7mConfig for kestrel bench step)
	Batch  int          // sequences per step, ≥ 1
	Steps  int          // timed steps, ≥ 1 (the median counts)
	Warmup int          // untimed steps first (arena allocation, page faults)
	// PeakGFLOPS is the peak MFU relates to; 0 = this machine's FMA peak
	// as a training run resolves it (internal/peak: cached, else probed and
	// cached).
	PeakGFLOPS float64
	// Ops times each part of the timed steps as well (StepBench.Ops): the
	// model's op spans (model.OpTracer; two clock reads per op), the GEMMs
	// inside them (kernels.SetGemmProfile: clock reads per packing and
	// macro-kernel work item), zero_grads and the optimizer — well under
	// 1% of a step.
	Ops bool
	// Precision is the products' arithmetic, as train.precision: "fp32"
	// ("" too) or "bf16" (refused without bf16 hardware; MFU then divides
	// by the measured peak of the bf16 kernel, peak.ResolveFor).
	Precision string
	// Parallel > 1 times the step as train.parallel_micro_batches runs it:
	// Parallel micro-batches of Batch rows side by side on model replicas
	// (internal/replicas), their gradients summed, then the optimizer;
	// the tokens of all of them count. With Ops every replica traces its
	// own pass and the op rows are per pass (OpTime), the fold a row of
	// its own.
	Parallel int
}

// validate checks the options BenchStep needs before any model is built.
func (opt StepBenchOptions) validate() error {
	if opt.Steps < 1 {
		return fmt.Errorf("bench step: --steps must be >= 1, got %d", opt.Steps)
	}
	if opt.Batch < 1 {
		return fmt.Errorf("bench step: --batch must be >= 1, got %d", opt.Batch)
	}
	return nil
}

// StepBench is the result of BenchStep.
type StepBench struct {
	TokensPerSec float64 // batch·seq_len ÷ median step time
	MFU          float64 // TokensPerSec · FLOPsPerToken ÷ PeakGFLOPS
	StepSec      float64 // median step time
	PeakRSSMB    float64 // the process's peak resident set
	PeakGFLOPS   float64 // the peak MFU relates to
	PeakSource   string  // where it came from: configured, cached or probed
	PeakDtype    string  // what the peak is the peak of (fp32 fma, bf16 …)
	Precision    string  // the products' arithmetic: fp32 or bf16
	// PeakProbeGFLOPS is what this run's start-up probe of the FMA peak
	// read (0 when the peak was configured): on a shared machine it says
	// how far below its best the cores ran this time, which MFU, divided by
	// the cached best, does not.
	PeakProbeGFLOPS float64
	Threads         int // kernels.Threads() during the steps
	Batch, Seq      int
	Parallel        int // micro-batches side by side per step (StepBenchOptions.Parallel; 1: one)
	Steps           int
	Params          int
	FLOPsPerToken   float64
	ArenaBytes      int
	LossFirst       float64 // loss of the first (warm-up) step
	LossLast        float64
	// Ops are the parts of the timed steps, largest first (with
	// StepBenchOptions.Ops; nil otherwise).
	Ops []OpTime
}

// BenchStep trains a freshly initialised model (seed 1) on random tokens:
// each step is forward + backward + one AdamW update over the flat buffers,
// the same work as a training step without data loading or monitoring. MFU
// relates the median step to opt.PeakGFLOPS, else to this machine's FMA peak
// on the same threads as a training run resolves it (peak.Resolve), so
// contention while it starts does not inflate MFU.
func BenchStep(ctx context.Context, opt StepBenchOptions) (StepBench, error) {
	if err := opt.validate(); err != nil {
		return StepBench{}, err
	}
	cfg := opt.Model
	// The peak resident set of this measurement alone: what earlier ones in
	// the same process left behind is returned to the OS first.
	runtime.GC()
	debug.FreeOSMemory()
	kernels.ResetPeakRSS()
	prec, err := ops.Resolve(opt.Precision)
	if err != nil {
		return StepBench{}, fmt.Errorf("bench step: --precision: %w", err)
	}
	m, err := model.New(cfg, 1)
	if err != nil {
		return StepBench{}, fmt.Errorf("bench step: %w", err)
	}
	m.SetPrecision(prec)
	var spans []optim.Span
	for _, t := range m.Tensors() {
		spans = append(spans, optim.Span{Name: t.Name, Offset: t.Offset, Size: t.Size, Kind: t.Kind})
	}
	adam, err := optim.NewAdamW(optim.DefaultConfig(), len(m.Params), spans)
	if err != nil {
		return StepBench{}, fmt.Errorf("bench step: optimizer: %w", err)
	}
	pk, pkDtype := peak.ResolveFor(peak.Options{Configured: opt.PeakGFLOPS, Threads: kernels.Threads()}, prec.String(), kernels.BF16Impl())
	T := cfg.SeqLen
	r := rand.New(rand.NewPCG(1, 2))
	b := model.RandomBatch(cfg, opt.Batch, r)
	P := max(1, opt.Parallel)
	set, err := benchReplicas(m, P, opt.Batch, r)
	if err != nil {
		return StepBench{}, err
	}
	var times []float64
	var first, last float64
	var tr *stepTrace
	if opt.Ops {
		tr = newStepTrace(m, set)
		defer kernels.SetGemmProfile(kernels.SetGemmProfile(true))
	}
	var timed time.Duration // wall time of the timed steps
	for s := 0; s < opt.Warmup+opt.Steps; s++ {
		if err := ctx.Err(); err != nil {
			return StepBench{}, err
		}
		timing := s >= opt.Warmup
		tr.on(timing)
		t0 := time.Now()
		m.StartAccumulation()
		t1 := time.Now()
		st, err := set.step(m, b, tr)
		if err != nil {
			return StepBench{}, fmt.Errorf("bench step: %w", err)
		}
		t2 := time.Now()
		if _, err := adam.Step(m.Params, m.Grads, st.Loss, 1e-3); err != nil {
			return StepBench{}, fmt.Errorf("bench step: optimizer: %w", err)
		}
		t3 := time.Now()
		el := t3.Sub(t0)
		if s == 0 {
			first = st.Loss
		}
		last = st.Loss
		if timing {
			times = append(times, el.Seconds())
			timed += el
			tr.add(OpZeroGrads, t1.Sub(t0))
			tr.add(OpOptimizer, t3.Sub(t2))
		}
	}
	tr.on(false)
	sort.Float64s(times)
	med := times[len(times)/2]
	tps := float64(P*opt.Batch*T) / med
	var ops []OpTime
	if tr != nil {
		ops = passOpTimes(tr.timers, tr.outside, timed, opt.Steps, m.OpFLOPs(opt.Batch*T), pk.GFLOPS, kernels.Threads())
	}
	return StepBench{
		TokensPerSec: tps, MFU: tps * m.FLOPsPerToken() / pk.FLOPS(), StepSec: med,
		PeakRSSMB: kernels.PeakRSSMB(), PeakGFLOPS: pk.GFLOPS, PeakSource: string(pk.Source), PeakProbeGFLOPS: pk.Probe,
		Threads: kernels.Threads(), Batch: opt.Batch, Parallel: P, Seq: T, Steps: opt.Steps, Params: m.NumParams(), FLOPsPerToken: m.FLOPsPerToken(),
		ArenaBytes: m.ArenaBytes(), LossFirst: first, LossLast: last, Ops: ops, PeakDtype: pkDtype, Precision: prec.String(),
	}, nil
}

// StepBenchFromRun is the benchmark of a run config's model: its [model]
// section, train.micro_batch sequences per pass (at most, and else,
// train.batch_size),
// train.parallel_micro_batches passes side by side (at most the step's
// micro-batches) and train.peak_gflops.
func StepBenchFromRun(m model.Config, t train.Config, steps, warmup int) StepBenchOptions {
	o := StepBenchOptions{Model: m, Batch: t.BatchSize, Steps: steps, Warmup: warmup, PeakGFLOPS: t.PeakGFLOPS, Precision: t.Precision}
	if t.MicroBatch > 0 {
		o.Batch = min(t.MicroBatch, t.BatchSize) // training caps it at the batch too
	}
	o.Parallel = min(max(1, t.ParallelMicroBatches), (t.BatchSize+o.Batch-1)/o.Batch)
	return o
}

// BenchStepThreads runs BenchStep once per thread count (kernels.SetThreads
// each time; the previous count is restored afterwards) and returns the
// results in that order. Each run has its own model and its own peak RSS.
func BenchStepThreads(ctx context.Context, opt StepBenchOptions, threads []int) ([]StepBench, error) {
	if len(threads) == 0 {
		threads = []int{kernels.Threads()}
	}
	for _, t := range threads {
		if t < 1 {
			return nil, fmt.Errorf("bench step: --threads must be >= 1, got %d", t)
		}
	}
	if err := opt.validate(); err != nil {
		return nil, err
	}
	prev := kernels.Threads()
	defer kernels.SetThreads(prev)
	var out []StepBench
	for _, t := range threads {
		kernels.SetThreads(t)
		r, err := BenchStep(ctx, opt)
		if err != nil {
			return out, fmt.Errorf("bench step: %d threads: %w", t, err)
		}
		out = append(out, r)
	}
	return out, nil
}

// ScalingEfficiency is r's tokens/s per thread relative to one thread's
// (base: a 1-thread result of the same model): TokensPerSec ÷ (Threads ·
// base.TokensPerSec). 1 means the extra cores are used perfectly; 0 when
// base is not a 1-thread result.
func (r StepBench) ScalingEfficiency(base StepBench) float64 {
	if base.Threads != 1 || base.TokensPerSec <= 0 || r.Threads < 1 {
		return 0
	}
	return r.TokensPerSec / (float64(r.Threads) * base.TokensPerSec)
}

// benchSet is the step's passes: one forward+backward of b on the model
// (set nil), or P passes side by side on replicas, each on its own random
// batch (the first is b), their gradients folded into the model's.
type benchSet struct {
	set *replicas.Set
	bs  []*model.Batch
}

func benchReplicas(m *model.Model, P, batch int, r *rand.Rand) (*benchSet, error) {
	if P <= 1 {
		return &benchSet{}, nil
	}
	set, err := replicas.New(m, P, batch, m.Cfg.SeqLen)
	if err != nil {
		return nil, fmt.Errorf("bench step: parallel micro-batches: %w", err)
	}
	bs := &benchSet{set: set}
	for range P - 1 {
		bs.bs = append(bs.bs, model.RandomBatch(m.Cfg, batch, r))
	}
	return bs, nil
}

// step runs the passes; the loss is their mean. With tr (Ops) the
// replicas' Begin counts as zero_grads and their Fold as fold.
func (s *benchSet) step(m *model.Model, b *model.Batch, tr *stepTrace) (model.Stats, error) {
	if s.set == nil {
		return m.ForwardBackward(b, 1)
	}
	P := s.set.P()
	passes := make([]replicas.Pass, P)
	passes[0] = replicas.Pass{Batch: b, Scale: 1 / float32(P)}
	for k := 1; k < P; k++ {
		passes[k] = replicas.Pass{Batch: s.bs[k-1], Scale: 1 / float32(P)}
	}
	t0 := time.Now()
	s.set.Begin()
	t1 := time.Now()
	stats, _, err := s.set.Round(passes)
	if err != nil {
		return model.Stats{}, err
	}
	t2 := time.Now()
	s.set.Fold(nil)
	tr.add(OpZeroGrads, t1.Sub(t0))
	tr.add(OpFold, time.Since(t2))
	var st model.Stats
	for _, x := range stats {
		st.Loss += x.Loss / float64(P)
	}
	return st, nil
}

// stepTrace is the op timers of a benchmarked step (StepBenchOptions.Ops):
// one per pass of a step (the model's, or each replica's: every replica
// traces its own spans) and the parts of the step outside the passes.
// Its methods do nothing on a nil stepTrace.
type stepTrace struct {
	models    []*model.Model
	timers    []*opTimer
	outside   map[string]time.Duration
	recording bool
}

func newStepTrace(m *model.Model, s *benchSet) *stepTrace {
	tr := &stepTrace{models: []*model.Model{m}, outside: map[string]time.Duration{}}
	if s.set != nil {
		tr.models = tr.models[:0]
		for r := range s.set.P() {
			tr.models = append(tr.models, s.set.Replica(r))
		}
	}
	for range tr.models {
		tr.timers = append(tr.timers, newOpTimer())
	}
	return tr
}

// on sets (or, with rec false, clears) every pass's tracer.
func (tr *stepTrace) on(rec bool) {
	if tr == nil {
		return
	}
	tr.recording = rec
	for i, m := range tr.models {
		m.Trace = nil
		if rec {
			m.Trace = tr.timers[i]
		}
	}
}

// add counts d to the part op of the step outside the passes while
// recording.
func (tr *stepTrace) add(op string, d time.Duration) {
	if tr != nil && tr.recording {
		tr.outside[op] += d
	}
}
