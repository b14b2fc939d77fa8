package monitor

import (
	"fmt"
	"math"
)

// Rule names of the process and optimizer vitals (memrules.go,
// ckptrules.go).
const (
	RuleMemoryCreep     = "memory_creep"
	RuleOptStateNonFin  = "opt_state_nonfinite"
	RuleCheckpointSize  = "checkpoint_size_jump"
	RuleLMHeadGrowth    = "lm_head_norm_growth"
	memCreepBlocks      = 8 // the creep window is judged in this many blocks
	memCreepMinRising   = memCreepBlocks - 2
	lmHeadGrowthMinRise = 3 // of the 4 block-to-block steps of the window
)

// vitalsRule is the process and optimizer vitals family, judged each
// step: opt_state_nonfinite, memory_creep (not fed Seed's history: the
// memory of an earlier process is no baseline) and lm_head_norm_growth.
// A step at or before the last one (a rollback) starts its windows over.
type vitalsRule struct {
	ctx *ruleCtx
	vitalState
}

func newVitalsRule(c *ruleCtx) *vitalsRule { return &vitalsRule{ctx: c} }

// vitalState is the state of the memory, optimizer-state and lm_head
// rules.
type vitalState struct {
	mem      []float64 // anonymous resident bytes of the steps since the rule's warm-up, oldest first
	memHeap  []float64 // go_heap_bytes beside mem (NaN = absent)
	memOut   []float64 // mem less go_mapped_bytes: resident memory outside the Go runtime's (NaN = absent)
	memSeen  int       // steps seen since this monitor started or the steps went back
	lastStep int64

	peakLR   float64   // the largest learning_rate seen
	lrs      []float64 // learning_rate of the steps in head
	head     []float64 // lm_head_norm of the recent steps, oldest first (cleared when the LR rises)
	headStep []int64
}

func (r *vitalsRule) observe(s *Sample, out *[]Alert) {
	v := &r.vitalState
	if s.Step <= v.lastStep { // a rollback: the process and its trajectory start over
		*v = vitalState{peakLR: v.peakLR}
	}
	v.lastStep = s.Step
	if x, ok := s.Values["opt_state_finite"]; ok && x == 0 {
		r.ctx.fire(out, s, RuleOptStateNonFin, "opt_state_finite", 0, 1,
			fmt.Sprintf("opt_state_finite = 0 at step %d: an Adam moment is NaN or infinite (adam_m_norm %.4g, adam_v_norm %.4g)", s.Step, s.Values["adam_m_norm"], s.Values["adam_v_norm"]))
	}
	if !r.ctx.seeding { // the memory of an earlier process is no baseline
		r.memoryCreep(out, s)
	}
	r.lmHeadGrowth(out, s)
}

// memCreepWarm is how many steps after a start (or a rollback) the creep
// rule ignores: the arenas, pools and page cache of a new process grow
// there.
func (c Config) memCreepWarm() int { return max(10, c.MemoryCreepWindow/4) }

// memoryCreep is the SEV1 memory_creep rule: the process's anonymous
// resident memory (rss_bytes less rss_file_bytes, the memory-mapped data
// and code the kernel can drop) grew steadily over the last
// memory_creep_window steps. The window is cut into 8 blocks; the median
// of each block must rise from block to block at least 6 times in 7 (one
// jump — a buffer allocated once — rises once), and the median rise × 8
// (the rate of one block's span over the whole window)
// must reach memory_creep_mb, and the live Go heap or the memory outside
// the Go runtime's must carry at least half of it (gcEnvelope). Quiet for
// the first memCreepWarm steps of every start and after a rollback.
func (r *vitalsRule) memoryCreep(out *[]Alert, s *Sample) {
	v, c := &r.vitalState, r.ctx.cfg
	rss, ok := s.Values["rss_bytes"]
	if !ok || !finite(rss) || c.MemoryCreepWindow <= 0 || c.MemoryCreepMB <= 0 {
		return
	}
	if f, ok := s.Values["rss_file_bytes"]; ok && finite(f) {
		rss -= f
	}
	v.memSeen++
	if v.memSeen <= c.memCreepWarm() {
		return
	}
	heap, outside := value(s, "go_heap_bytes"), math.NaN()
	if m := value(s, "go_mapped_bytes"); finite(m) {
		outside = rss - m
	}
	v.mem, v.memHeap, v.memOut = append(v.mem, rss), append(v.memHeap, heap), append(v.memOut, outside)
	if n := len(v.mem) - c.MemoryCreepWindow; n > 0 {
		v.mem, v.memHeap, v.memOut = v.mem[n:], v.memHeap[n:], v.memOut[n:]
	}
	w := len(v.mem)
	if w < c.MemoryCreepWindow || w < memCreepBlocks {
		return
	}
	meds := blockMedians(v.mem, memCreepBlocks)
	rises, steps := 0, make([]float64, 0, memCreepBlocks-1)
	for i := 1; i < len(meds); i++ {
		d := meds[i] - meds[i-1]
		if d > 0 {
			rises++
		}
		steps = append(steps, d)
	}
	growth := median(steps) * memCreepBlocks // block medians are a block's span apart: the rate over the window
	thr := c.MemoryCreepMB * (1 << 20)
	if rises < memCreepMinRising || !(growth >= thr) || gcEnvelope(v.memHeap, v.memOut, growth) {
		return
	}
	msg := fmt.Sprintf("anonymous resident memory grew %.0f MiB over the last %d steps (%.3g MiB per 1000 steps), rising in %d of %d blocks of the window: now %.0f MiB",
		growth/(1<<20), w, growth/(1<<20)*1000/float64(w), rises, memCreepBlocks-1, rss/(1<<20))
	if h0, h1 := v.memHeap[0], v.memHeap[w-1]; finite(h0) && finite(h1) {
		msg += fmt.Sprintf("; go_heap_bytes %.0f → %.0f MiB (%s)", h0/(1<<20), h1/(1<<20), heapVerdict(h1-h0, growth))
	}
	r.ctx.fire(out, s, RuleMemoryCreep, "rss_bytes", growth, thr, msg)
}

// gcEnvelope reports whether a growth of the resident memory is the Go
// heap filling towards its GC goal rather than a leak: the live heap
// (heap, go_heap_bytes) and the resident memory outside the Go runtime's
// (outside, rss less go_mapped_bytes) together grew by less than half of
// it over the window. Between collections a process's heap fills with
// garbage up to about twice the live heap, and the runtime returns freed
// pages slowly, so a healthy run's rss_bytes climbs for hundreds of steps
// (the demo: 530 → 890 MiB over 400 steps, live heap flat) and then
// levels. A leak of Go objects raises the live heap; one outside Go
// (mmap, cgo) raises the resident memory outside the runtime's. Without
// both measurements (another trainer's log) the growth is not explained.
func gcEnvelope(heap, outside []float64, growth float64) bool {
	n := len(heap)
	if n == 0 || !finite(heap[0]) || !finite(heap[n-1]) || !finite(outside[0]) || !finite(outside[n-1]) {
		return false
	}
	lo := heap[0]
	for _, h := range heap {
		if finite(h) {
			lo = math.Min(lo, h)
		}
	}
	o := blockMedians(outside, memCreepBlocks)
	return (heap[n-1]-lo)+math.Max(0, o[len(o)-1]-o[0]) < growth/2
}

// value is s's value of name, NaN when absent.
func value(s *Sample, name string) float64 {
	if x, ok := s.Values[name]; ok {
		return x
	}
	return math.NaN()
}

// heapVerdict says whether the Go heap carries the growth.
func heapVerdict(heapGrowth, growth float64) string {
	if heapGrowth >= growth/2 {
		return "the Go heap grows with it: objects kept alive"
	}
	return "the Go heap does not: memory outside the Go heap (mmap, cgo, the runtime's own) or freed but not returned"
}

// blockMedians cuts xs into k consecutive blocks (the first ones one
// longer when k does not divide len(xs)) and returns each block's median.
func blockMedians(xs []float64, k int) []float64 {
	out := make([]float64, 0, k)
	n, at := len(xs), 0
	for i := 0; i < k; i++ {
		sz := n / k
		if i < n%k {
			sz++
		}
		out = append(out, median(append([]float64(nil), xs[at:at+sz]...)))
		at += sz
	}
	return out
}

// lmHeadGrowth is the SEV2 lm_head_norm_growth rule (seed 001: the
// lm_head norm growth of late-cooldown divergences, which a small z-loss
// stopped): late in the cooldown — learning_rate at most lm_head_late_lr ×
// the largest learning_rate of the run, below that peak over the last two
// windows and falling over the last — the last window steps cut into 5
// blocks, the median lm_head_norm of each block rose from block to block
// at least 3 times in 4, by more than lm_head_growth (a fraction) from the
// first block to the last, and by more than over the window before it (a
// healthy head keeps growing in the cooldown, slower as the LR falls). The window restarts whenever the LR rises
// (a re-warm-up) and after a rollback.
func (r *vitalsRule) lmHeadGrowth(out *[]Alert, s *Sample) {
	v, c := &r.vitalState, r.ctx.cfg
	lr, okLR := s.Values["learning_rate"]
	x, okX := s.Values["lm_head_norm"]
	if !okLR || !finite(lr) || c.LMHeadGrowth <= 0 {
		return
	}
	v.peakLR = math.Max(v.peakLR, lr)
	if n := len(v.lrs); n > 0 && lr > v.lrs[n-1] {
		v.lrs, v.head, v.headStep = v.lrs[:0], v.head[:0], v.headStep[:0]
	}
	if !okX || !finite(x) || x <= 0 {
		return
	}
	win := max(c.Window, 8)
	v.lrs, v.head, v.headStep = append(v.lrs, lr), append(v.head, x), append(v.headStep, s.Step)
	if n := len(v.head) - 2*win; n > 0 {
		v.lrs, v.head, v.headStep = v.lrs[n:], v.head[n:], v.headStep[n:]
	}
	// Two windows inside the decay, the end late in it.
	if len(v.head) < 2*win || !(lr <= c.LMHeadLateLR*v.peakLR) || !(lr < v.lrs[win]) || !(v.lrs[0] < v.peakLR) {
		return
	}
	g, q, rises := growth(v.head[win:])
	gPrev, _, _ := growth(v.head[:win])
	// Steady, large, and not slowing down while the LR falls: a healthy
	// head's growth slows with the LR.
	if rises < lmHeadGrowthMinRise || !(g > c.LMHeadGrowth) || !(g > gPrev) {
		return
	}
	r.ctx.fire(out, s, RuleLMHeadGrowth, "lm_head_norm", x, q[0]*(1+c.LMHeadGrowth),
		fmt.Sprintf("lm_head_norm rose %.1f%% (%.4g → %.4g) over steps %d-%d, faster than the %.1f%% of the %d steps before, while learning_rate decayed %.3g → %.3g (%.0f%% of its peak %.3g): the late-cooldown lm_head growth that precedes low-LR divergences",
			100*g, q[0], q[len(q)-1], v.headStep[win], s.Step, 100*gPrev, win, v.lrs[win], lr, 100*lr/v.peakLR, v.peakLR))
}

// growth cuts xs into 5 blocks and returns the relative rise from the
// first block's median to the last's, the medians, and how many of the 4
// block-to-block steps rose.
func growth(xs []float64) (g float64, q []float64, rises int) {
	q = blockMedians(xs, 5)
	for i := 1; i < len(q); i++ {
		if q[i] > q[i-1] {
			rises++
		}
	}
	return (q[len(q)-1] - q[0]) / q[0], q, rises
}
