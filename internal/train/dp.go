package train

import (
	"fmt"
	"math"
	"sort"
	"time"
	"unsafe"

	"github.com/kestrel-lm/kestrel/internal/comm"
)

// Data parallelism (docs/distributed.md). Every rank builds the same model
// and the same batch(step); rank r of N takes rows [r·B/N, (r+1)·B/N) of the
// global batch B, in micro-batches of train.micro_batch, each scaled by
// rows/B as in a single process. The gradient is then all-reduced (summed:
// the 1/B is already in the scale), in buckets — the head, each layer from
// the last, the embedding — each started as soon as the last micro-batch's
// backward has finished it, so communication overlaps the rest of
// backward. The loss, z-loss, token and padding counts and the per-source
// counts are all-reduced too. Every rank then holds the same gradient and
// parameters, so the optimizer's decisions (grad norm and clipping,
// update-norm clipping, skip-bad-step, NaN stop) come out the same on every
// rank without further talk; the decisions that depend on a clock or on
// the monitor (Ctrl-C, train.max_minutes, an observer's SEV0 stop) are
// agreed on by a small all-reduce after every step. Rank 0 alone writes
// metrics, evaluations, checkpoints and the manifest.
//
// Reduction order: the sum of two ranks' float32 gradients is a single
// rounding, the same as a single process adding its second micro-batch's
// scaled gradient to the first's, so 2 ranks × micro_batch B/2 and 1
// process × micro_batch B/2 agree step for step up to how a micro-batch's
// own backward accumulates (see TestDataParallelEquality). With more ranks
// Open MPI picks the association.

// dataParallel is the trainer's side of a group of ranks (nil: one process).
type dataParallel struct {
	c          comm.Comm
	rank, size int
	hosts      []string

	buckets []gradBucket // in the order backward finishes them
	grads   []float32
	next    int // the first bucket not yet started this step
	reqs    []comm.Request

	// per-step accounting
	wait  time.Duration // blocked in collectives
	bytes int64         // float32 gradient bytes this rank all-reduced
}

type gradBucket struct {
	lo, hi int
	ready  bool
}

// newDataParallel sets up data parallelism over c for net (nil when c has
// one rank).
func newDataParallel(c comm.Comm, net Net, timeout time.Duration) (*dataParallel, error) {
	if c == nil || c.Size() < 2 {
		return nil, nil
	}
	d := &dataParallel{c: c, rank: c.Rank(), size: c.Size(), grads: net.Grads()}
	if timeout > 0 {
		comm.SetTimeout(c, timeout)
	}
	hs, err := c.AllGatherBytes([]byte(c.Host()))
	if err != nil {
		return nil, fmt.Errorf("train: data parallel: exchanging host names: %w", err)
	}
	for _, h := range hs {
		d.hosts = append(d.hosts, string(h))
	}
	if m := Model(net); m != nil {
		add := func(part int) {
			lo, hi := m.GradRange(part)
			if hi > lo {
				d.buckets = append(d.buckets, gradBucket{lo: lo, hi: hi})
			}
		}
		add(-1)
		for l := m.Cfg.NLayers - 1; l >= 0; l-- {
			add(l)
		}
		add(-2)
	}
	covered := 0
	for _, b := range d.buckets {
		covered += b.hi - b.lo
	}
	if covered != len(d.grads) { // a stand-in Net, or a layout the parts do not cover: one bucket
		d.buckets = []gradBucket{{lo: 0, hi: len(d.grads)}}
	}
	return d, nil
}

// lead reports whether this rank writes the run's files (rank 0, or a
// single process).
func (d *dataParallel) lead() bool { return d == nil || d.rank == 0 }

// ranks is the number of ranks (1 in a single process).
func (d *dataParallel) ranks() int {
	if d == nil {
		return 1
	}
	return d.size
}

// share returns this rank's rows [lo, hi) of a global batch of B rows.
func (d *dataParallel) share(B int) (lo, hi int) {
	if d == nil {
		return 0, B
	}
	return d.rank * B / d.size, (d.rank + 1) * B / d.size
}

// beginStep clears the per-step state.
func (d *dataParallel) beginStep() {
	if d == nil {
		return
	}
	for i := range d.buckets {
		d.buckets[i].ready = false
	}
	d.next, d.reqs, d.wait, d.bytes = 0, d.reqs[:0], 0, 0
}

// arm makes the model report finished gradient ranges during the next
// backward (the rank's last micro-batch of the step); disarm undoes it.
func (d *dataParallel) arm(net Net) {
	if d == nil {
		return
	}
	if m := Model(net); m != nil {
		m.GradsReady = d.ready
	}
}

func (d *dataParallel) disarm(net Net) {
	if d == nil {
		return
	}
	if m := Model(net); m != nil {
		m.GradsReady = nil
	}
}

// ready marks the buckets inside [lo, hi) finished and starts, in bucket
// order, every finished bucket not yet started; it then pokes the started
// all-reduces so they progress while backward goes on.
func (d *dataParallel) ready(lo, hi int) {
	for i := range d.buckets {
		if b := &d.buckets[i]; b.lo >= lo && b.hi <= hi {
			b.ready = true
		}
	}
	for d.next < len(d.buckets) && d.buckets[d.next].ready {
		d.start(d.next)
		d.next++
	}
	for _, r := range d.reqs {
		if t, ok := r.(interface{ Test() bool }); ok {
			t.Test()
		}
	}
}

// start begins the all-reduce of bucket i; an error is kept as a Request
// that returns it from Wait.
func (d *dataParallel) start(i int) {
	b := d.buckets[i]
	r, err := d.c.IAllReduceF32(d.grads[b.lo:b.hi])
	if err != nil {
		r = failed{err}
	}
	d.reqs = append(d.reqs, r)
	d.bytes += int64(4 * (b.hi - b.lo))
}

type failed struct{ err error }

func (f failed) Wait() error { return f.err }

// finishGrads starts the buckets backward did not report (all of them on a
// rank without rows this step, or for a Net without the hook) and waits for
// every all-reduce.
func (d *dataParallel) finishGrads(step int) error {
	if d == nil {
		return nil
	}
	for ; d.next < len(d.buckets); d.next++ {
		d.start(d.next)
	}
	t0 := time.Now()
	defer func() { d.wait += time.Since(t0) }()
	for _, r := range d.reqs {
		// The first failure ends the step: after a timeout the later
		// buckets would only time out one by one too.
		if err := r.Wait(); err != nil {
			return d.wrap(step, "gradient all-reduce", err)
		}
	}
	return nil
}

// sum all-reduces xs (sum) in place.
func (d *dataParallel) sum(step int, what string, xs []float64) error {
	if d == nil {
		return nil
	}
	t0 := time.Now()
	err := d.c.AllReduceF64(xs, comm.Sum)
	d.wait += time.Since(t0)
	return d.wrap(step, what, err)
}

// qkMax makes the step's per-head max attention logits (QK-Clip's input)
// the max over all ranks, so every rank clips the same heads.
func (d *dataParallel) qkMax(step int, q *qkClipper) error {
	if d == nil || q == nil {
		return nil
	}
	var xs []float64
	for _, hs := range q.max {
		for _, x := range hs {
			xs = append(xs, float64(x))
		}
	}
	t0 := time.Now()
	err := d.c.AllReduceF64(xs, comm.Max)
	d.wait += time.Since(t0)
	if err != nil {
		return d.wrap(step, "QK-Clip max logits", err)
	}
	i := 0
	for _, hs := range q.max {
		for h := range hs {
			hs[h] = float32(xs[i])
			i++
		}
	}
	return nil
}

// agree returns, on every rank, the elementwise max of flags over the
// ranks: a stop any rank (or rank 0's monitor) decided is everyone's.
func (d *dataParallel) agree(step int, flags ...bool) ([]bool, error) {
	if d == nil {
		return flags, nil
	}
	xs := make([]int64, len(flags))
	for i, f := range flags {
		if f {
			xs[i] = 1
		}
	}
	if err := d.c.AllReduceI64(xs, comm.Max); err != nil {
		return nil, d.wrap(step, "agreeing on stopping", err)
	}
	out := make([]bool, len(flags))
	for i, x := range xs {
		out[i] = x != 0
	}
	return out, nil
}

// startParams makes every rank start from rank 0's parameters (identical
// already when every rank initialised from the same seed or loaded the same
// checkpoint; the broadcast makes sure) and checks that every rank resumes
// from the same step.
func (d *dataParallel) startParams(step int, params []float32) error {
	if d == nil {
		return nil
	}
	lo, hi := []int64{int64(step)}, []int64{int64(step)}
	if err := d.c.AllReduceI64(lo, comm.Min); err != nil {
		return d.wrap(step, "comparing the resumed steps", err)
	}
	if err := d.c.AllReduceI64(hi, comm.Max); err != nil {
		return d.wrap(step, "comparing the resumed steps", err)
	}
	if lo[0] != hi[0] {
		return fmt.Errorf("train: data parallel: the ranks resumed from different steps (%d to %d): every rank must see the same run directory (a shared filesystem)", lo[0], hi[0])
	}
	if len(params) == 0 {
		return nil
	}
	b := unsafe.Slice((*byte)(unsafe.Pointer(&params[0])), 4*len(params))
	if err := d.c.Bcast(b, 0); err != nil {
		return d.wrap(step, "broadcasting the parameters", err)
	}
	return nil
}

// rankTimes are one rank's seconds of one step.
type rankTimes struct {
	Step, Compute, AllReduce, DataWait float64
}

// gatherTimes returns every rank's times of this step (on every rank).
func (d *dataParallel) gatherTimes(step int, mine rankTimes) ([]rankTimes, error) {
	if d == nil {
		return []rankTimes{mine}, nil
	}
	xs := make([]float64, 4*d.size)
	copy(xs[4*d.rank:], []float64{mine.Step, mine.Compute, mine.AllReduce, mine.DataWait})
	if err := d.c.AllReduceF64(xs, comm.Sum); err != nil { // zeros elsewhere: the sum is a gather
		return nil, d.wrap(step, "gathering the per-rank times", err)
	}
	out := make([]rankTimes, d.size)
	for r := range out {
		out[r] = rankTimes{xs[4*r], xs[4*r+1], xs[4*r+2], xs[4*r+3]}
	}
	return out, nil
}

// rankMetrics fills the per-rank vitals (rank_step_time/rankR,
// rank_compute_time/rankR, rank_allreduce_time/rankR,
// rank_data_wait_time/rankR), the straggler ratio (max ÷ median step
// time over the ranks) with the slowest rank, and this rank's gradient
// bytes all-reduced, into per (a Step's PerLayer map).
func rankMetrics(per map[string]float64, ts []rankTimes, bytes int64) {
	steps := make([]float64, len(ts))
	slow := 0
	for r, t := range ts {
		k := fmt.Sprintf("/rank%d", r)
		per["rank_step_time"+k] = t.Step
		per["rank_compute_time"+k] = t.Compute
		per["rank_allreduce_time"+k] = t.AllReduce
		per["rank_data_wait_time"+k] = t.DataWait
		steps[r] = t.Step
		if t.Step > ts[slow].Step {
			slow = r
		}
	}
	sort.Float64s(steps)
	med := steps[len(steps)/2]
	if len(steps)%2 == 0 {
		med = (steps[len(steps)/2-1] + steps[len(steps)/2]) / 2
	}
	ratio := math.NaN()
	if med > 0 {
		ratio = steps[len(steps)-1] / med
	}
	per["straggler_ratio"] = ratio
	per["straggler_rank"] = float64(slow)
	per["allreduce_bytes"] = float64(bytes)
	per["ranks"] = float64(len(ts))
}

// wrap names the step and, for a hang, keeps the HangError reachable.
func (d *dataParallel) wrap(step int, what string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("step %d: rank %d of %d on %s: %s: %w", step, d.rank, d.size, d.c.Host(), what, err)
}

// Hosts returns the host of every rank (nil in a single process).
func (d *dataParallel) Hosts() []string {
	if d == nil {
		return nil
	}
	return d.hosts
}
