package stepbench

import (
	"sort"
	"time"

	"github.com/kestrel-lm/kestrel/internal/kernels"
	"github.com/kestrel-lm/kestrel/internal/model"
)

// Names of the step's parts outside the model's op spans in OpTime.
const (
	OpZeroGrads = "zero_grads" // Model.StartAccumulation before the pass (was ZeroGrads, a clear)
	OpOptimizer = "optimizer"  // the AdamW step
	OpFold      = "fold"       // replicas.Fold: the side-by-side passes' gradients summed (Parallel > 1)
	OpOther     = "other"      // the rest of the step: time outside every span
)

// OpTime is one part of a benchmarked training step (StepBenchOptions.Ops):
// a model op (the names model.OpTracer receives, backward ones included,
// summed over layers), zero_grads, fold (Parallel > 1), optimizer or
// other.
//
// With Parallel = P > 1 the step runs P passes side by side, each on one
// thread, every replica traced on its own: PassMS is the op's self time in
// one pass (mean over the replicas), GFLOP one pass's FLOPs and PctPeak
// against one thread's peak (the peak ÷ the threads), and MS what the op
// adds to the step's wall time, PassMS times the passes one thread runs
// after each other (1 with a thread per pass, P on one thread); other is
// the step's wall time the rows leave, so the shares still sum to 1.
type OpTime struct {
	Name string
	// MS is its self time per step: its spans less the spans nested in
	// them (attention less its GEMMs and core), mean over the timed steps.
	MS float64
	// PassMS is its self time in one pass (MS with one pass a step; 0
	// for the parts outside the passes: zero_grads, fold, optimizer,
	// other).
	PassMS float64
	// Share is MS ÷ the mean step time; the shares of a step sum to 1.
	Share float64
	// GFLOP is what MFU credits to the op per pass (model.OpFLOPs): GEMMs,
	// the attention core at full T×T, MoE MLPs; 0 for everything else.
	GFLOP float64
	// GFLOPS is GFLOP ÷ PassMS and PctPeak that over the peak of the
	// threads one pass runs on (all of them with one pass a step, else
	// one; both 0 when GFLOP is).
	GFLOPS, PctPeak float64
	// GemmPack, GemmKernel and GemmOther split the thread time of the op's
	// GEMMs (kernels.GemmProfile): packing, the macro-kernel, and the rest
	// (threads waiting at phase ends or for the other product of a pair,
	// setup); they sum to 1, or are all 0 for an op without GEMMs, and
	// for every op when passes ran at the same time on several threads
	// (the GEMM profile is the process's: a span would count the other
	// passes' GEMMs).
	GemmPack, GemmKernel, GemmOther float64
	// KernelPctPeak is the micro-kernel's own rate in the step: GFLOP over
	// the macro-kernel's thread time, against the peak per thread; only for
	// the GEMM ops (model.IsGEMMOp), whose FLOPs are their GEMMs'.
	KernelPctPeak float64
}

// opTimer is the model.OpTracer of a benchmarked step: it adds each span's
// self time, and the self part of the GEMM profile (kernels.GemmProfile,
// on while the timer runs), to its op.
type opTimer struct {
	open []openSpan
	self map[string]time.Duration
	gemm map[string]kernels.GemmProfile
}

type openSpan struct {
	op        string
	start     time.Time
	prof      kernels.GemmProfile // the GEMM profile at the start
	inner     time.Duration       // time of the spans nested in it
	innerProf kernels.GemmProfile // their GEMM profile
}

func newOpTimer() *opTimer {
	return &opTimer{self: map[string]time.Duration{}, gemm: map[string]kernels.GemmProfile{}}
}

// Begin implements model.OpTracer.
func (t *opTimer) Begin(op string, _ int) {
	t.open = append(t.open, openSpan{op: op, start: time.Now(), prof: kernels.ReadGemmProfile()})
}

// End implements model.OpTracer.
func (t *opTimer) End() {
	n := len(t.open)
	if n == 0 {
		return
	}
	s := t.open[n-1]
	t.open = t.open[:n-1]
	d, p := time.Since(s.start), kernels.ReadGemmProfile().Sub(s.prof)
	t.self[s.op] += d - s.inner
	if self := p.Sub(s.innerProf); self.Total > 0 {
		t.gemm[s.op] = t.gemm[s.op].Add(self)
	}
	if n > 1 {
		t.open[n-2].inner += d
		t.open[n-2].innerProf = t.open[n-2].innerProf.Add(p)
	}
}

// passOpTimes turns the spans of a step's passes into OpTimes, largest
// first: timers holds one opTimer per pass of a step (replica r's,
// len(timers) = P), outside the parts of the step outside the passes
// (zero_grads, fold, optimizer), both summed over steps timed steps of
// total wall time; fl are one pass's FLOPs (model.OpFLOPs) and peak the
// GFLOP/s MFU divides by on threads threads. Other is total less every
// row (never below 0).
func passOpTimes(timers []*opTimer, outside map[string]time.Duration, total time.Duration, steps int, fl map[string]float64, peak float64, threads int) []OpTime {
	P := len(timers)
	perStep := func(d time.Duration) float64 { return d.Seconds() * 1000 / float64(steps) }
	stepMS := perStep(total)
	// One pass runs on every thread, or P passes on min(P, threads)
	// threads, one each, waves of them one after the other.
	passThreads, conc := threads, 1
	if P > 1 {
		passThreads, conc = 1, max(1, min(P, threads))
	}
	waves := float64((P + conc - 1) / conc)
	self, gemm := map[string]time.Duration{}, map[string]kernels.GemmProfile{}
	for _, t := range timers {
		for name, d := range t.self {
			self[name] += d
		}
		for name, g := range t.gemm {
			gemm[name] = gemm[name].Add(g)
		}
	}
	var ops []OpTime
	var rows float64
	for name, d := range self {
		pass := perStep(d) / float64(P)
		o := OpTime{Name: name, MS: pass * waves, PassMS: pass, GFLOP: fl[name] / 1e9}
		rows += o.MS
		ops = append(ops, o)
	}
	for name, d := range outside {
		ops = append(ops, OpTime{Name: name, MS: perStep(d)})
		rows += perStep(d)
	}
	ops = append(ops, OpTime{Name: OpOther, MS: max(stepMS-rows, 0)})
	passPeak := peak * float64(passThreads) / float64(max(threads, 1))
	for i := range ops {
		o := &ops[i]
		o.Share = o.MS / stepMS
		if o.GFLOP > 0 && o.PassMS > 0 {
			o.GFLOPS = o.GFLOP / (o.PassMS / 1000)
			if passPeak > 0 {
				o.PctPeak = o.GFLOPS / passPeak
			}
		}
		if g := gemm[o.Name]; g.Total > 0 && conc == 1 {
			tot := float64(g.Total)
			o.GemmPack, o.GemmKernel, o.GemmOther = float64(g.Pack)/tot, float64(g.Kernel)/tot, float64(g.Other())/tot
			if kernelSec := g.Kernel.Seconds() / float64(steps*P); model.IsGEMMOp(o.Name) && kernelSec > 0 && peak > 0 && threads > 0 {
				o.KernelPctPeak = o.GFLOP / kernelSec / (peak / float64(threads))
			}
		}
	}
	sort.Slice(ops, func(i, j int) bool {
		if ops[i].MS != ops[j].MS {
			return ops[i].MS > ops[j].MS
		}
		return ops[i].Name < ops[j].Name
	})
	return ops
}

// MFUBounds say how far removing parts of a benchmarked step could take
// its MFU: what MFU would be if only some of the step's ops took time (the
// rest none), against the same peak, from the ops' mean times
// (StepBench.Bounds). They bound what folding, fusing or overlapping the
// other parts could gain without making the FLOP ops themselves faster.
type MFUBounds struct {
	// Mean is the MFU of the mean step the ops split (StepBench.MFU is of
	// the median step).
	Mean float64
	// FLOPOpsOptimizer: only the ops MFU credits FLOPs to (the GEMMs, the
	// attention core, MoE MLPs) and the optimizer took time; no
	// elementwise passes, norms, embedding, loss, zero_grads or other.
	FLOPOpsOptimizer float64
	// FLOPOps: only the ops MFU credits FLOPs to took time.
	FLOPOps float64
	// Kernels: as FLOPOps, with the GEMM ops' packing and waiting gone too
	// (their time scaled by their GEMMs' kernel share).
	Kernels float64
}

// Bounds are r's MFUBounds, from r.Ops (all zero without them).
func (r StepBench) Bounds() MFUBounds {
	var step, flopOps, opt, kern, gflop float64 // ms per step; GFLOP per step
	for _, o := range r.Ops {
		step += o.MS
		gflop += o.GFLOP * float64(max(1, r.Parallel)) // OpTime.GFLOP is one pass's
		switch {
		case o.Name == OpOptimizer:
			opt += o.MS
		case o.GFLOP <= 0:
		case model.IsGEMMOp(o.Name) && o.GemmKernel > 0:
			flopOps += o.MS
			kern += o.MS * o.GemmKernel
		default:
			flopOps += o.MS
			kern += o.MS
		}
	}
	mfu := func(ms float64) float64 {
		if ms <= 0 || r.PeakGFLOPS <= 0 {
			return 0
		}
		return gflop / (ms / 1000) / r.PeakGFLOPS
	}
	return MFUBounds{Mean: mfu(step), FLOPOpsOptimizer: mfu(flopOps + opt), FLOPOps: mfu(flopOps), Kernels: mfu(kern)}
}

var _ model.OpTracer = (*opTimer)(nil)
