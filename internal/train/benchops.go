package train

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/kestrel-lm/kestrel/internal/model"
)

// Names of the step's parts outside the model's op spans in OpTime.
const (
	OpZeroGrads = "zero_grads" // Model.ZeroGrads before the pass
	OpOptimizer = "optimizer"  // the AdamW step
	OpOther     = "other"      // the rest of the step: time outside every span
)

// OpTime is one part of a benchmarked training step (StepBenchOptions.Ops):
// a model op (the names model.OpTracer receives, backward ones included,
// summed over layers), zero_grads, optimizer or other.
type OpTime struct {
	Name string
	// MS is its self time per step: its spans less the spans nested in
	// them (attention less its GEMMs and core), mean over the timed steps.
	MS float64
	// Share is MS ÷ the mean step time; the shares of a step sum to 1.
	Share float64
	// GFLOP is what MFU credits to the op per step (model.OpFLOPs): GEMMs,
	// the attention core at full T×T, MoE MLPs; 0 for everything else.
	GFLOP float64
	// GFLOPS is GFLOP ÷ MS and PctPeak that over the peak MFU divides by
	// (both 0 when GFLOP is).
	GFLOPS, PctPeak float64
}

// opTimer is the model.OpTracer of a benchmarked step: it adds each span's
// self time to its op.
type opTimer struct {
	open []openSpan
	self map[string]time.Duration
}

type openSpan struct {
	op    string
	start time.Time
	inner time.Duration // time of the spans nested in it
}

// Begin implements model.OpTracer.
func (t *opTimer) Begin(op string, _ int) {
	t.open = append(t.open, openSpan{op: op, start: time.Now()})
}

// End implements model.OpTracer.
func (t *opTimer) End() {
	n := len(t.open)
	if n == 0 {
		return
	}
	s := t.open[n-1]
	t.open = t.open[:n-1]
	d := time.Since(s.start)
	t.self[s.op] += d - s.inner
	if n > 1 {
		t.open[n-2].inner += d
	}
}

// opTimes turns the self times summed over steps timed steps (total: the
// steps' wall time) into OpTimes, largest first, with other as the
// remainder; fl are the FLOPs per step of model.OpFLOPs and peak the
// GFLOP/s MFU divides by.
func opTimes(self map[string]time.Duration, total time.Duration, steps int, fl map[string]float64, peak float64) []OpTime {
	perStep := func(d time.Duration) float64 { return d.Seconds() * 1000 / float64(steps) }
	stepMS := perStep(total)
	var ops []OpTime
	var spanned time.Duration
	for name, d := range self {
		spanned += d
		o := OpTime{Name: name, MS: perStep(d), GFLOP: fl[name] / 1e9}
		ops = append(ops, o)
	}
	ops = append(ops, OpTime{Name: OpOther, MS: perStep(max(total-spanned, 0))})
	for i := range ops {
		o := &ops[i]
		o.Share = o.MS / stepMS
		if o.GFLOP > 0 && o.MS > 0 {
			o.GFLOPS = o.GFLOP / (o.MS / 1000)
			if peak > 0 {
				o.PctPeak = o.GFLOPS / peak
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

// OpFields are the op as `kestrel bench step --ops --json` prints it, one
// object per op after the step's.
func (o OpTime) OpFields(preset string, threads int) map[string]any {
	round := func(x float64) float64 { return math.Round(x*1000) / 1000 }
	return map[string]any{
		"op": "step_op", "preset": preset, "threads": threads, "name": o.Name,
		"ms": round(o.MS), "share": round(o.Share), "gflop": round(o.GFLOP),
		"gflops": round(o.GFLOPS), "pct_peak": round(o.PctPeak),
	}
}

// OpsTable is r.Ops as text: one line per op, the GEMM-like ones with
// their rate and fraction of the peak.
func (r StepBench) OpsTable() string {
	var b strings.Builder
	fmt.Fprintf(&b, "  %-24s %9s %7s %8s %9s %8s\n", "op ("+fmt.Sprint(r.Threads)+" threads)", "ms/step", "share", "GFLOP", "GFLOP/s", "of peak")
	for _, o := range r.Ops {
		if o.GFLOP > 0 {
			fmt.Fprintf(&b, "  %-24s %9.2f %6.1f%% %8.2f %9.1f %7.1f%%\n", o.Name, o.MS, 100*o.Share, o.GFLOP, o.GFLOPS, 100*o.PctPeak)
		} else {
			fmt.Fprintf(&b, "  %-24s %9.2f %6.1f%%\n", o.Name, o.MS, 100*o.Share)
		}
	}
	return strings.TrimSuffix(b.String(), "\n")
}

var _ model.OpTracer = (*opTimer)(nil)
