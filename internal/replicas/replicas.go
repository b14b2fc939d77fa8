// Package replicas runs a training step's micro-batches side by side
// (train.parallel_micro_batches): P replicas of one model share its
// parameters, each owns its gradient buffer, activations and scratch, and
// the P passes of a round run at once on the kernels' pool, one per
// participant, every op inside a pass inline on its own goroutine (the
// pool runs a nested parallel call inline). At the baby-GPT shapes one
// pass on one thread keeps a higher share of the FMA peak than one pass
// split over two threads, whose small GEMMs and barriers lose it.
//
// The arithmetic is a pure function of P and the batches, never of the
// thread count or of which goroutine ran which replica: micro-batch k
// runs on replica k mod P, each replica accumulates its micro-batches in
// order (the first writes its gradient), and Fold sums the replicas'
// gradients in the fixed order replica 0 + replica 1 + … into replica 0,
// the model itself. It is a different order of summation than
// accumulating every micro-batch in one model, so the gradient agrees
// with the sequential one to float rounding, not bit for bit.
//
// Evaluate runs the validation batches the same way, forward only: batch
// k on replica k mod P, rounds of P side by side, each batch's loss the
// same bits as scoring it alone on the model on any number of threads, so
// a sum over the batches in order is too (the trainer's val_loss,
// val_loss_ema and slices are those of the sequential evaluation).
package replicas

import (
	"errors"
	"fmt"
	"time"

	"github.com/kestrel-lm/kestrel/internal/kernels"
	"github.com/kestrel-lm/kestrel/internal/model"
	"github.com/kestrel-lm/kestrel/internal/runlog"
)

// Set is P replicas of one model; replica 0 is the model itself, whose
// Grads hold the step's gradient after Fold. A Set is used by one
// goroutine at a time (its rounds use the pool's others).
type Set struct {
	reps  []*model.Model
	slots []Slot
	ran   []bool // replica r ran a pass since Begin
	pass  passTask
	eval  evalTask
	fold  foldTask
}

// Slot is one replica's batch buffers: a micro-batch of up to the rows
// New was given.
type Slot struct {
	Inputs, Targets, SegIDs []int32
	Srcs                    []int
}

// New builds a Set of p ≥ 2 replicas of m (replica 0 is m) with batch
// buffers of rows sequences of seqLen tokens per replica. A
// mixture-of-experts model is refused (model.Replica).
func New(m *model.Model, p, rows, seqLen int) (*Set, error) {
	if p < 2 {
		return nil, fmt.Errorf("replicas: %d replicas: a set has at least 2", p)
	}
	if m == nil {
		return nil, errors.New("replicas: no model")
	}
	s := &Set{reps: []*model.Model{m}, ran: make([]bool, p)}
	for r := 1; r < p; r++ {
		rep, err := m.Replica()
		if err != nil {
			return nil, fmt.Errorf("replicas: %w", err)
		}
		s.reps = append(s.reps, rep)
	}
	n := rows * seqLen
	for range p {
		s.slots = append(s.slots, Slot{Inputs: make([]int32, n), Targets: make([]int32, n), SegIDs: make([]int32, n), Srcs: make([]int, rows)})
	}
	s.pass.reps = s.reps
	return s, nil
}

// For is the Set a run of train.parallel_micro_batches = p asks for, or
// nil, and then why not where p > 1: a data-parallel run accumulates in
// one model (its all-reduce starts inside the last backward pass), a
// network that is not a model.Model (m nil) has no replicas, nor has an
// MoE model.
func For(m *model.Model, p, rows, seqLen int, dataParallel bool) (*Set, string) {
	switch {
	case p <= 1:
		return nil, ""
	case dataParallel:
		return nil, "a data-parallel run accumulates in one model (its all-reduce starts inside the last backward pass)"
	case m == nil:
		return nil, "the network is not a model.Model"
	}
	s, err := New(m, p, rows, seqLen)
	if err != nil {
		return nil, err.Error()
	}
	return s, ""
}

// P is the number of replicas.
func (s *Set) P() int { return len(s.reps) }

// Replica is replica r (0: the model itself).
func (s *Set) Replica(r int) *model.Model { return s.reps[r] }

// Slot is replica r's batch buffers.
func (s *Set) Slot(r int) Slot { return s.slots[r] }

// Begin starts a step: every replica follows replica 0's config and
// precision (model.Follow) and starts its accumulation, so its first pass
// writes its gradient.
func (s *Set) Begin() {
	for r, rep := range s.reps {
		if r > 0 {
			rep.Follow(s.reps[0])
		}
		rep.StartAccumulation()
		s.ran[r] = false
	}
}

// Pass is one micro-batch: its rows and the scale of its gradient (its
// share of the global batch).
type Pass struct {
	Batch *model.Batch
	Scale float32
}

// Timing is the wall time of one round split as the trainer's metrics
// report it: Forward is the longest forward pass of the round, Backward
// the rest of the round's wall time (until the last pass ended).
type Timing struct {
	Start             time.Time
	Forward, Backward time.Duration
}

// Round runs passes[i] on replica i (at most P of them) side by side and
// returns their stats in that order, the round's timing and the first
// error by pass index.
func (s *Set) Round(passes []Pass) ([]model.Stats, Timing, error) {
	if len(passes) > len(s.reps) {
		return nil, Timing{}, fmt.Errorf("replicas: %d passes in a round of %d replicas", len(passes), len(s.reps))
	}
	t := &s.pass
	t.passes, t.stats, t.errs = passes, t.stats[:0], t.errs[:0]
	for range passes {
		t.stats, t.errs = append(t.stats, model.Stats{}), append(t.errs, nil)
	}
	t0 := time.Now()
	kernels.ParallelForTask(len(passes), 1, t)
	tm := Timing{Start: t0}
	for i := range passes {
		s.ran[i] = true
		tm.Forward = max(tm.Forward, t.stats[i].ForwardTime)
		if err := t.errs[i]; err != nil {
			return t.stats, tm, fmt.Errorf("replica %d: %w", i, err)
		}
	}
	tm.Backward = time.Since(t0) - tm.Forward
	t.passes = nil
	return t.stats, tm, nil
}

// Fill writes micro-batch k into buf, the batch buffers of the replica
// that runs it, and returns it as a pass.
type Fill func(k int, buf Slot) (Pass, error)

// Done hears pass k after its round: its stats and the vitals of the
// replica that ran it (valid until that replica's next pass).
type Done func(k int, p Pass, st model.Stats, v *model.Vitals)

// Step is what Run measured: the spans of its rounds as the trainer's
// metrics record them (per round data_wait: its batches filled; forward:
// its longest forward pass; backward: the rest of its wall time, the
// last one up to the end of the fold), their sums, and per replica the
// rows it ran and, when asked for, |its gradient|² before the sum.
type Step struct {
	Spans                   []runlog.Span
	Data, Forward, Backward time.Duration
	Rows                    []int
	Sq                      []float64     // nil unless asked for
	Last                    *model.Vitals // the vitals of the last pass's replica
}

// Run accumulates a step's n micro-batches: Begin, then rounds of P,
// micro-batch k filled into and run on replica k mod P, each round side
// by side (Round), done called in order of k after each round, then
// Fold. A fill error is returned as it is, a pass's wrapped.
func (s *Set) Run(n int, fill Fill, done Done, sq bool) (Step, error) {
	P := len(s.reps)
	st := Step{Rows: make([]int, P)}
	s.Begin()
	passes := make([]Pass, 0, P)
	for k0 := 0; k0 < n; k0 += P {
		t0 := time.Now()
		passes = passes[:0]
		for k := k0; k < min(k0+P, n); k++ {
			p, err := fill(k, s.slots[k-k0])
			if err != nil {
				return st, err
			}
			passes = append(passes, p)
			st.Rows[k-k0] += p.Batch.B
		}
		t1 := time.Now()
		stats, tm, err := s.Round(passes)
		if err != nil {
			return st, fmt.Errorf("forward/backward: %w", err)
		}
		for i, x := range stats {
			done(k0+i, passes[i], x, s.reps[i].Vitals())
		}
		st.Data, st.Forward, st.Backward = st.Data+t1.Sub(t0), st.Forward+tm.Forward, st.Backward+tm.Backward
		st.Spans = append(st.Spans, runlog.Span{Name: "data_wait", Start: t0, Dur: t1.Sub(t0)},
			runlog.Span{Name: "forward", Start: t1, Dur: tm.Forward}, runlog.Span{Name: "backward", Start: t1.Add(tm.Forward), Dur: tm.Backward})
	}
	if sq {
		st.Sq = make([]float64, P)
	}
	s.Fold(st.Sq)
	if n > 0 {
		last := &st.Spans[len(st.Spans)-1]
		d := time.Since(last.Start) - last.Dur
		last.Dur += d
		st.Backward += d
		st.Last = s.reps[(n-1)%P].Vitals()
	}
	return st, nil
}

// Accumulator is a network that accumulates a step's gradient in one
// model (train.Net).
type Accumulator interface {
	StartAccumulation()
	ForwardBackward(b *model.Batch, scale float32) (model.Stats, error)
}

// Sequential accumulates n micro-batches one after the other in net, each
// filled into buf, the first pass writing the gradient
// (train.parallel_micro_batches = 1); done hears each pass with nil
// vitals. A fill error is returned as it is, a pass's wrapped.
func Sequential(net Accumulator, buf Slot, n int, fill Fill, done Done) error {
	net.StartAccumulation()
	for k := 0; k < n; k++ {
		p, err := fill(k, buf)
		if err != nil {
			return err
		}
		st, err := net.ForwardBackward(p.Batch, p.Scale)
		if err != nil {
			return fmt.Errorf("forward/backward: %w", err)
		}
		done(k, p, st, nil)
	}
	return nil
}

// passTask runs pass i on replica i.
type passTask struct {
	reps   []*model.Model
	passes []Pass
	stats  []model.Stats
	errs   []error
}

func (t *passTask) Run(start, end int) {
	for i := start; i < end; i++ {
		t.stats[i], t.errs[i] = t.reps[i].ForwardBackward(t.passes[i].Batch, t.passes[i].Scale)
	}
}

// Fold adds the gradients of replicas 1, 2, … that ran a pass since
// Begin into replica 0's, in that order, in one pass over blocks split
// over the kernels' pool. With sq non-nil (P long) it also sets sq[r] to
// |Grads_r|² of each replica that ran, before the sum (0 for one that did
// not): float32 partials per block of blockLen summed in float64 in block
// order, the same bits whatever the threads.
func (s *Set) Fold(sq []float64) {
	f := &s.fold
	g := s.reps[0].Grads
	nb := (len(g) + blockLen - 1) / blockLen
	P := len(s.reps)
	f.srcs, f.ids = f.srcs[:0], append(f.ids[:0], 0)
	for r := 1; r < P; r++ {
		if s.ran[r] {
			f.srcs, f.ids = append(f.srcs, s.reps[r].Grads), append(f.ids, r)
		}
	}
	f.dst, f.norms, f.p = g, sq != nil, P
	if cap(f.parts) < nb*P {
		f.parts = make([]float64, nb*P)
	}
	f.parts = f.parts[:nb*P]
	kernels.ParallelForTask(nb, foldGrain, f)
	for r := range sq {
		sq[r] = 0
	}
	if f.norms {
		for k := 0; k < nb; k++ {
			for i, r := range f.ids {
				sq[r] += f.parts[k*P+i]
			}
		}
	}
	f.dst, f.srcs = nil, f.srcs[:0]
}

// blockLen is the floats of one block of Fold (64 KiB: a few blocks of
// each gradient stay in cache between its norm and its sum).
const blockLen = 16384

// foldGrain is the fewest blocks one participant of the pool takes.
const foldGrain = 4

// foldTask sums the gradients block by block.
type foldTask struct {
	dst   []float32
	srcs  [][]float32
	ids   []int // the replica of each gradient read: 0 (dst), then srcs'
	norms bool
	p     int       // replicas: the stride of parts
	parts []float64 // [block][gradient] |block|², gradient 0 = dst before the sum
}

func (f *foldTask) Run(start, end int) {
	P := f.p
	for k := start; k < end; k++ {
		lo, hi := k*blockLen, min((k+1)*blockLen, len(f.dst))
		d := f.dst[lo:hi]
		if !f.norms {
			for _, src := range f.srcs {
				kernels.Add(d, d, src[lo:hi])
			}
			continue
		}
		if len(f.srcs) == 0 {
			f.parts[k*P] = float64(kernels.Dot(d, d))
		}
		for i, src := range f.srcs { // |d|² and |x|² as kernels.Dot reads them, in the sum's pass
			dd, xx := kernels.SquaresAdd(d, src[lo:hi])
			if i == 0 {
				f.parts[k*P] = float64(dd)
			}
			f.parts[k*P+i+1] = float64(xx)
		}
	}
}
