package comm

import (
	"fmt"
	"sync"
	"time"
)

// Local returns n in-process ranks (one goroutine each is the caller's
// business) connected through a shared hub, for unit tests of code that
// runs on several ranks. Collectives are matched by each rank's own
// sequence number, so non-blocking ones complete in the order they were
// started, as in MPI. Reductions run in rank order 0..n−1 on every rank.
func Local(n int) []Comm {
	if n < 1 {
		n = 1
	}
	h := &hub{n: n, gens: map[int64]*gen{}, abort: make(chan struct{})}
	cs := make([]Comm, n)
	for r := range cs {
		cs[r] = &local{h: h, rank: r, host: fmt.Sprintf("local%d", r)}
	}
	return cs
}

// hub is what the ranks of a Local group share.
type hub struct {
	n       int
	mu      sync.Mutex
	gens    map[int64]*gen // collectives started by some rank and not yet complete
	abort   chan struct{}
	aborted bool
	timeout time.Duration
}

// gen is one collective: every rank's contribution, by rank.
type gen struct {
	op      string
	vals    []any
	arrived []bool
	count   int
	done    chan struct{}
}

// local is one rank of a Local group.
type local struct {
	h    *hub
	rank int
	host string
	seq  int64 // collectives this rank has started
}

// post contributes v to this rank's next collective and returns it.
func (l *local) post(op string, v any) (*gen, int64, error) {
	h := l.h
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.aborted {
		return nil, 0, ErrAborted
	}
	seq := l.seq
	l.seq++
	g := h.gens[seq]
	if g == nil {
		g = &gen{op: op, vals: make([]any, h.n), arrived: make([]bool, h.n), done: make(chan struct{})}
		h.gens[seq] = g
	}
	if g.op != op {
		return nil, 0, fmt.Errorf("comm: rank %d called %s as collective #%d where another rank called %s", l.rank, op, seq, g.op)
	}
	g.vals[l.rank] = v
	g.arrived[l.rank] = true
	g.count++
	if g.count == h.n {
		delete(h.gens, seq)
		close(g.done)
	}
	return g, seq, nil
}

// wait blocks until every rank contributed to g, the group aborts or the
// timeout expires.
func (l *local) wait(g *gen, seq int64) ([]any, error) {
	h := l.h
	h.mu.Lock()
	d := h.timeout
	h.mu.Unlock()
	var tc <-chan time.Time
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		tc = t.C
	}
	select {
	case <-g.done:
		return g.vals, nil
	case <-h.abort:
		return nil, ErrAborted
	case <-tc:
		h.mu.Lock()
		defer h.mu.Unlock()
		e := &HangError{Op: g.op, Seq: seq, Rank: l.rank, Timeout: d}
		for r, ok := range g.arrived {
			if !ok {
				e.Missing = append(e.Missing, r)
				e.Hosts = append(e.Hosts, fmt.Sprintf("local%d", r))
			}
		}
		return nil, e
	}
}

// exchange posts v and waits for everyone's contribution.
func (l *local) exchange(op string, v any) ([]any, error) {
	g, seq, err := l.post(op, v)
	if err != nil {
		return nil, err
	}
	return l.wait(g, seq)
}

func (l *local) Rank() int    { return l.rank }
func (l *local) Size() int    { return l.h.n }
func (l *local) Host() string { return l.host }

// SetTimeout sets the timeout of every rank's collectives.
func (l *local) SetTimeout(d time.Duration) {
	l.h.mu.Lock()
	l.h.timeout = d
	l.h.mu.Unlock()
}

func (l *local) AllReduceF32(buf []float32) error {
	r, err := l.IAllReduceF32(buf)
	if err != nil {
		return err
	}
	return r.Wait()
}

// localRequest is a started Local collective.
type localRequest struct {
	l      *local
	g      *gen
	seq    int64
	finish func([]any) error
}

func (r *localRequest) Wait() error {
	vals, err := r.l.wait(r.g, r.seq)
	if err != nil {
		return err
	}
	return r.finish(vals)
}

func (l *local) IAllReduceF32(buf []float32) (Request, error) {
	g, seq, err := l.post("allreduce_f32", append([]float32(nil), buf...))
	if err != nil {
		return nil, err
	}
	return &localRequest{l: l, g: g, seq: seq, finish: func(vals []any) error {
		if err := sameLen(vals, len(buf), "allreduce_f32"); err != nil {
			return err
		}
		copy(buf, vals[0].([]float32))
		for _, v := range vals[1:] {
			for i, x := range v.([]float32) {
				buf[i] += x
			}
		}
		return nil
	}}, nil
}

func (l *local) AllReduceF64(buf []float64, op Op) error {
	if err := checkOp(op); err != nil {
		return err
	}
	vals, err := l.exchange("allreduce_f64_"+op.String(), append([]float64(nil), buf...))
	if err != nil {
		return err
	}
	if err := sameLen(vals, len(buf), "allreduce_f64"); err != nil {
		return err
	}
	copy(buf, vals[0].([]float64))
	for _, v := range vals[1:] {
		for i, x := range v.([]float64) {
			buf[i] = reduceF64(op, buf[i], x)
		}
	}
	return nil
}

func (l *local) AllReduceI64(buf []int64, op Op) error {
	if err := checkOp(op); err != nil {
		return err
	}
	vals, err := l.exchange("allreduce_i64_"+op.String(), append([]int64(nil), buf...))
	if err != nil {
		return err
	}
	if err := sameLen(vals, len(buf), "allreduce_i64"); err != nil {
		return err
	}
	copy(buf, vals[0].([]int64))
	for _, v := range vals[1:] {
		for i, x := range v.([]int64) {
			switch op {
			case Sum:
				buf[i] += x
			case Max:
				buf[i] = max(buf[i], x)
			case Min:
				buf[i] = min(buf[i], x)
			}
		}
	}
	return nil
}

// reduceF64 applies op; Max and Min propagate NaN as MPI's do not promise
// anything about it, so a NaN anywhere is a NaN in the result.
func reduceF64(op Op, a, b float64) float64 {
	switch op {
	case Max:
		if a != a || b != b {
			return a + b
		}
		return max(a, b)
	case Min:
		if a != a || b != b {
			return a + b
		}
		return min(a, b)
	}
	return a + b
}

func (l *local) Bcast(buf []byte, root int) error {
	if err := checkRoot(root, l.h.n); err != nil {
		return err
	}
	vals, err := l.exchange("bcast", clone(buf))
	if err != nil {
		return err
	}
	src := vals[root].([]byte)
	if len(src) != len(buf) {
		return fmt.Errorf("comm: bcast: rank %d has %d bytes, root %d has %d", l.rank, len(buf), root, len(src))
	}
	copy(buf, src)
	return nil
}

func (l *local) BcastBytes(b []byte, root int) ([]byte, error) {
	if err := checkRoot(root, l.h.n); err != nil {
		return nil, err
	}
	vals, err := l.exchange("bcast_bytes", clone(b))
	if err != nil {
		return nil, err
	}
	return clone(vals[root].([]byte)), nil
}

func (l *local) GatherBytes(b []byte, root int) ([][]byte, error) {
	if err := checkRoot(root, l.h.n); err != nil {
		return nil, err
	}
	vals, err := l.exchange("gather_bytes", clone(b))
	if err != nil || l.rank != root {
		return nil, err
	}
	out := make([][]byte, len(vals))
	for r, v := range vals {
		out[r] = clone(v.([]byte))
	}
	return out, nil
}

func (l *local) AllGatherBytes(b []byte) ([][]byte, error) {
	vals, err := l.exchange("allgather_bytes", clone(b))
	if err != nil {
		return nil, err
	}
	out := make([][]byte, len(vals))
	for r, v := range vals {
		out[r] = clone(v.([]byte))
	}
	return out, nil
}

func (l *local) AllToAllBytes(send [][]byte) ([][]byte, error) {
	if len(send) != l.h.n {
		return nil, fmt.Errorf("comm: alltoall: rank %d has %d send buffers for a group of %d ranks", l.rank, len(send), l.h.n)
	}
	cp := make([][]byte, len(send))
	for i, b := range send {
		cp[i] = clone(b)
	}
	vals, err := l.exchange("alltoall_bytes", cp)
	if err != nil {
		return nil, err
	}
	out := make([][]byte, len(vals))
	for r, v := range vals {
		out[r] = clone(v.([][]byte)[l.rank])
	}
	return out, nil
}

func (l *local) Barrier() error {
	_, err := l.exchange("barrier", nil)
	return err
}

// Abort makes every pending and later collective of the group return
// ErrAborted (in-process ranks cannot be killed one by one).
func (l *local) Abort(code int) {
	h := l.h
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.aborted {
		h.aborted = true
		close(h.abort)
	}
}

func (l *local) Close() error { return nil }

func sameLen(vals []any, n int, op string) error {
	for r, v := range vals {
		m := -1
		switch x := v.(type) {
		case []float32:
			m = len(x)
		case []float64:
			m = len(x)
		case []int64:
			m = len(x)
		}
		if m != n {
			return fmt.Errorf("comm: %s: rank %d has %d elements, this rank %d", op, r, m, n)
		}
	}
	return nil
}
