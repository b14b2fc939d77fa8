package kernels

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// The worker pool: Threads()-1 persistent goroutines plus the calling
// goroutine. A parallel call publishes one job, wakes the workers, and every
// participant (the caller included) claims chunks until none are left, so a
// worker slowed down or descheduled by other load on the machine simply takes
// fewer chunks. The caller waits only for chunks that were claimed and are
// still running, never for a worker that has not started: a late worker finds
// the job's epoch changed and goes back to sleep. Nothing is allocated per
// call.
//
// Only one parallel job runs at a time: a ParallelFor issued while the pool is
// busy (from inside another ParallelFor's fn, or from a second goroutine) runs
// inline on its caller, which keeps nesting deadlock-free.

// Task is the allocation-free form of a ParallelFor body: a pointer to a
// caller-owned struct converts to Task without allocating, whereas a closure
// built at the call site may be heap-allocated on every call.
type Task interface {
	Run(start, end int)
}

// funcTask adapts a func to Task without allocating (it is a named func type).
type funcTask func(start, end int)

func (f funcTask) Run(start, end int) { f(start, end) }

// The job state word: epoch (16 bits) | max participants (8) | chunks (20) |
// next chunk to claim (20). Claiming is one CAS on it, so a participant can
// only claim a chunk of the job it read the epoch of, and once a chunk is
// claimed the job (and its fields) stay put until that chunk is reported done.
const (
	stNextBits   = 20
	stChunksBits = 20
	stMaxBits    = 8
	stMaxChunks  = 1<<stNextBits - 1
	stMaxThreads = 1<<stMaxBits - 1
)

type pool struct {
	mu      sync.Mutex // held for the duration of one parallel job
	workers []*worker
	stopped bool // set (under mu) when SetThreads retired this pool

	// The current job, written by the caller before it publishes state:
	// either a Task, or a wtask that is also told which participant runs
	// each chunk.
	task      Task
	wt        wtask
	n         int
	chunk     int
	epoch     uint64
	state     atomic.Uint64
	remaining atomic.Int64  // chunks not yet finished
	done      chan struct{} // a worker that finishes the last chunk signals here
}

// wtask is the internal form of a job body that needs per-thread scratch:
// w is the participant index, 0 for the caller and 1..Threads()-1 for workers.
type wtask interface {
	runw(w, start, end int)
}

type worker struct {
	id   int
	wake chan struct{}
	quit chan struct{}
}

// thePool is read without a lock: a chunk running on a worker may issue a
// nested ParallelFor while SetThreads (holding poolSizeMu) waits for that
// worker's job to end, so the read path must never wait on poolSizeMu.
var thePool atomic.Pointer[pool]

func init() { thePool.Store(newPool(runtime.GOMAXPROCS(0))) }

// poolSizeMu serialises SetThreads against itself.
var poolSizeMu sync.Mutex

func newPool(threads int) *pool {
	threads = max(1, min(threads, stMaxThreads))
	p := &pool{done: make(chan struct{}, 1)}
	for i := 0; i < threads-1; i++ {
		w := &worker{id: i + 1, wake: make(chan struct{}, 1), quit: make(chan struct{})}
		p.workers = append(p.workers, w)
		go p.loop(w)
	}
	return p
}

// spinFor is how long a participant keeps its core busy watching for what
// it waits on (a worker: the next job; the caller: the last chunk of its
// job) before it blocks on a channel. A blocked goroutine's thread goes to
// sleep, and on a virtual machine an idle virtual CPU then halts: waking it
// took ~100 µs on this project's 2-core VM (the second thread joined every
// job that late: kestrel's own measurement, BenchmarkPoolLatency), longer
// than many of a small model's parallel ops take in all. The step's ops
// follow each other within microseconds, so the watching bridges the gaps;
// past spinFor of idleness the workers sleep and leave the core alone.
var spinFor = 500 * time.Microsecond

func (p *pool) loop(w *worker) {
	for {
		select {
		case <-w.wake:
			p.serve(w.id)
		case <-w.quit:
			return
		}
	}
}

// serve runs the current job's chunks, then watches the job state for up to
// spinFor and runs the next job's as soon as it is published (its wake-up
// token, still in the channel, later finds nothing to do).
func (p *pool) serve(id int) {
	for {
		if p.work(id) {
			p.done <- struct{}{}
		}
		if !p.watch(func() bool { return p.open(id) }) {
			return
		}
	}
}

// open reports whether the current job has chunks left to claim for
// participant id.
func (p *pool) open(id int) bool {
	next, chunks, maxT := jobState(p.state.Load())
	return next < chunks && uint64(id) < maxT
}

// jobState splits the job state word: the next chunk to claim, the number
// of chunks and the most participants.
func jobState(st uint64) (next, chunks, maxT uint64) {
	return st & stMaxChunks, st >> stNextBits & (1<<stChunksBits - 1), st >> (stNextBits + stChunksBits) & stMaxThreads
}

// watch polls ready, yielding the processor to other goroutines between
// polls, until it reports true (watch returns true) or spinFor has passed
// (false).
func (p *pool) watch(ready func() bool) bool {
	start := time.Now()
	for i := 0; ; i++ {
		if ready() {
			return true
		}
		if i&63 == 63 && time.Since(start) > spinFor {
			return false
		}
		runtime.Gosched()
	}
}

// work claims and runs chunks of the current job until none are left; it
// reports whether this participant finished the job's last chunk.
func (p *pool) work(id int) (last bool) {
	for {
		st := p.state.Load()
		next, chunks, maxT := jobState(st)
		if next >= chunks || uint64(id) >= maxT {
			return false
		}
		if !p.state.CompareAndSwap(st, st+1) {
			continue
		}
		s := int(next) * p.chunk
		e := min(s+p.chunk, p.n)
		if p.wt != nil {
			p.wt.runw(id, s, e)
		} else {
			p.task.Run(s, e)
		}
		if p.remaining.Add(-1) == 0 {
			return true
		}
	}
}

// run executes task (or wt) over [0,n) in chunks of the given size using up
// to maxThreads participants. The caller must hold p.mu.
func (p *pool) run(n, chunk, maxThreads int, task Task, wt wtask) {
	chunks := (n + chunk - 1) / chunk
	if chunks > stMaxChunks {
		chunk = (n + stMaxChunks - 1) / stMaxChunks
		chunks = (n + chunk - 1) / chunk
	}
	maxThreads = min(maxThreads, stMaxThreads)
	p.task, p.wt, p.n, p.chunk = task, wt, n, chunk
	p.remaining.Store(int64(chunks))
	p.epoch++
	p.state.Store(p.epoch<<(stNextBits+stChunksBits+stMaxBits) | uint64(maxThreads)<<(stNextBits+stChunksBits) | uint64(chunks)<<stNextBits)
	helpers := min(len(p.workers), maxThreads-1, chunks-1)
	for _, w := range p.workers[:helpers] {
		select {
		case w.wake <- struct{}{}:
		default: // already has a wake-up pending; it will see this job
		}
	}
	if !p.work(0) {
		// A worker is finishing the last chunk: watch for its done signal
		// before blocking on it (see spinFor).
		p.watch(func() bool { return len(p.done) > 0 })
		<-p.done
	}
	// Close the job: a late worker now sees next >= chunks.
	p.state.Store(p.epoch << (stNextBits + stChunksBits + stMaxBits))
	p.task, p.wt = nil, nil
}

func (p *pool) stop() {
	p.stopped = true
	for _, w := range p.workers {
		close(w.quit)
	}
}

func currentPool() *pool { return thePool.Load() }

// Threads returns the number of threads parallel kernels use (the persistent
// workers plus the calling goroutine). It starts at GOMAXPROCS.
func Threads() int { return len(currentPool().workers) + 1 }

// SetThreads resizes the pool to n threads (n < 1 means GOMAXPROCS). It waits
// for a running parallel job to finish first.
func SetThreads(n int) {
	if n < 1 {
		n = runtime.GOMAXPROCS(0)
	}
	poolSizeMu.Lock()
	defer poolSizeMu.Unlock()
	old := thePool.Load()
	if len(old.workers)+1 == n {
		return
	}
	// Publish the new pool first so that callers (including nested calls
	// from the old pool's running job) move on, then retire the old one once
	// its job, if any, has finished.
	thePool.Store(newPool(n))
	old.mu.Lock()
	old.stop()
	old.mu.Unlock()
}

// ParallelFor splits [0,n) into chunks of at least grain items and runs
// fn(start, end) for each on the persistent pool, the caller included; it
// returns when all chunks are done. It runs fn(0, n) inline when n < 2·grain,
// when the pool has one thread, or when the pool is already busy (nested or
// concurrent calls). Chunks may run in any order and concurrently, so fn must
// only write disjoint data per range.
//
// To stay allocation-free, pass a func value created once (for example stored
// in a struct field) rather than a closure built at each call, or use
// ParallelForTask.
func ParallelFor(n, grain int, fn func(start, end int)) {
	ParallelForTask(n, grain, funcTask(fn))
}

// ParallelForTask is ParallelFor with the body given as a Task.
func ParallelForTask(n, grain int, t Task) {
	if n <= 0 {
		return
	}
	if grain < 1 {
		grain = 1
	}
	p := currentPool()
	if len(p.workers) == 0 || n < 2*grain || !p.mu.TryLock() {
		t.Run(0, n)
		return
	}
	defer p.mu.Unlock()
	if p.stopped {
		t.Run(0, n)
		return
	}
	threads := len(p.workers) + 1
	// Up to 4 chunks per thread balance load when a core is shared with other
	// processes, without making chunks smaller than grain.
	chunks := 4 * threads
	if mx := n / grain; chunks > mx {
		chunks = mx
	}
	chunk := (n + chunks - 1) / chunks
	p.run(n, chunk, threads, t, nil)
}

// parallelChunksW runs t over [0,n) in ceil(n/chunk) chunks of the given
// size on at most maxThreads participants (inline, as participant 0, when the
// pool is busy or single-threaded).
func parallelChunksW(n, chunk, maxThreads int, t wtask) {
	if n <= 0 {
		return
	}
	p := currentPool()
	if len(p.workers) == 0 || maxThreads < 2 || n <= chunk || !p.mu.TryLock() {
		serialChunks(n, chunk, t)
		return
	}
	defer p.mu.Unlock()
	if p.stopped {
		serialChunks(n, chunk, t)
		return
	}
	p.run(n, chunk, maxThreads, nil, t)
}

func serialChunks(n, chunk int, t wtask) {
	for s := 0; s < n; s += chunk {
		t.runw(0, s, min(s+chunk, n))
	}
}
