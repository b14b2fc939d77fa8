package kernels

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// Side by side with row sharing. SgemmPair's two products (a backward
// pass's dx = dy·W and dW += dyᵀ·x) have the same m·n·k but not the same
// cost: on one thread each, the faster one's thread waited for the
// slower at the pair's end. So each product is cut into row chunks of C
// (whole mr-row tiles, all kc slices each, as runAllSlices), and one pool
// job of two participants runs the pair: participant i packs all of
// op(B) of product i, then computes its chunks from the first row down; a
// participant done with its own product takes the other's chunks from
// the last row up (reading the packed op(B) the other packed, for those
// chunks only). Every tile of C gets the same micro-kernel calls in the
// same order (beta on the first kc slice, 1 after) whichever thread
// computes it, so the result is the same bit for bit.

// pairChunksPer is about how many row chunks each product of a pair is
// cut into: enough that the thread done first can take a fair share of
// the other's rows, few enough that each chunk multiplies a few tiles
// against each packed strip of op(B).
const pairChunksPer = 8

// pairShare is one product of a pair run with row sharing.
type pairShare struct {
	g      *gemmCtx
	rows   int           // rows of C per chunk (whole mr tiles)
	packed atomic.Int32  // 0: op(B) not packed, 1: being packed, 2: packed
	claim  atomic.Uint64 // unclaimed chunks [front, back): front | back<<32
	stolen atomic.Int32  // chunks computed by the other product's participant
	_      [64]byte      // keep the two shares' atomics on separate cache lines
}

// pairStealTask is the pool job: work item i is product i's participant.
type pairStealTask struct{ p [2]pairShare }

// pairShareRows turns row sharing on (a variable so that tests and
// benchmarks can compare it with the whole products of one thread each).
var pairShareRows = true

// pairStolen counts, for tests, the chunks taken from the other product.
var pairStolen atomic.Int64

// pairStealable reports whether a can run with row sharing: an fp32
// product that is not degenerate (m, n, k ≥ 1, alpha ≠ 0), of one nc
// panel, whose packed op(B) (every kc slice) stays small enough to be
// packed whole (allSlicesMaxB).
func pairStealable(a *GemmArgs) bool {
	kn := kern
	if a.BF16 || kn.bf16 || a.M <= 0 || a.N <= 0 || a.K <= 0 || a.Alpha == 0 || a.N > kn.nc {
		return false
	}
	return (a.N+kn.nr-1)/kn.nr*kn.nr*a.K <= allSlicesMaxB
}

// sgemmPairShared runs x and y side by side with row sharing (see
// pairStealable) on two threads.
func sgemmPairShared(x, y *GemmArgs) {
	checkOperand("C", false, x.M, x.N, x.C, x.Ldc)
	checkOperand("C", false, y.M, y.N, y.C, y.Ldc)
	t := getStealTask()
	for i, a := range [2]*GemmArgs{x, y} {
		g := newCtx(kern, true, a.TransA, a.TransB, a.M, a.N, a.K, a.Alpha, a.A, a.Lda, a.B, a.Ldb, a.Beta, a.C, a.Ldc)
		kn := g.k
		if len(g.per) < 2 {
			g.per = make([]gemmPerThread, 2)
		}
		for w := range g.per[:2] {
			g.per[w].edge = grow(g.per[w].edge, kn.mr*kn.nr)
		}
		tiles := (a.M + kn.mr - 1) / kn.mr
		per := min(max(1, (tiles+pairChunksPer-1)/pairChunksPer), max(1, kn.mc/kn.mr))
		g.mcChunk = per * kn.mr
		g.bPack = grow(g.bPack, (a.N+kn.nr-1)/kn.nr*kn.nr*kn.kdepth(a.K))
		g.bPanel = g.bPack
		s := &t.p[i]
		s.g, s.rows = g, g.mcChunk
		s.packed.Store(0)
		s.stolen.Store(0)
		s.claim.Store(uint64((a.M+g.mcChunk-1)/g.mcChunk) << 32)
	}
	t0 := profStart()
	parallelChunksW(2, 1, 2, t)
	profAdd(&gprof.total, t0, 2)
	for i := range t.p {
		pairStolen.Add(int64(t.p[i].stolen.Load()))
		putCtx(t.p[i].g)
		t.p[i].g = nil
	}
	putStealTask(t)
}

// runw runs items [s,e): item i packs product i's op(B) (unless the other
// participant already did), computes its chunks from the front, then
// takes what is left of the other product's from the back.
func (t *pairStealTask) runw(w, s, e int) {
	for i := s; i < e; i++ {
		own, other := &t.p[i], &t.p[1-i]
		own.pack()
		for {
			c, ok := own.take(false)
			if !ok {
				break
			}
			own.compute(w, c)
		}
		other.pack()
		for {
			c, ok := other.take(true)
			if !ok {
				break
			}
			other.compute(w, c)
			other.stolen.Add(1)
		}
	}
}

// pack packs all of op(B) of the product once: the first caller packs,
// a later one waits until it is done.
func (s *pairShare) pack() {
	if s.packed.CompareAndSwap(0, 1) {
		g := s.g
		strips := (g.n + g.k.nr - 1) / g.k.nr
		g.packAllSlices(0, (g.kk+g.k.kc-1)/g.k.kc*strips)
		s.packed.Store(2)
		return
	}
	for s.packed.Load() != 2 {
		runtime.Gosched()
	}
}

// take claims one unclaimed chunk: the first (back false) or the last.
func (s *pairShare) take(back bool) (int, bool) {
	for {
		v := s.claim.Load()
		f, b := v&(1<<32-1), v>>32
		if f >= b {
			return 0, false
		}
		nv, c := (b<<32)|(f+1), f
		if back {
			nv, c = ((b-1)<<32)|f, b-1
		}
		if s.claim.CompareAndSwap(v, nv) {
			return int(c), true
		}
	}
}

// compute computes chunk c's rows of C on participant w.
func (s *pairShare) compute(w, c int) {
	g := s.g
	r0 := c * s.rows
	g.blocksAllSlices(&g.per[w], r0, min(g.m, r0+s.rows))
}

// stealFree recycles the pair tasks (see pairFree).
var stealFree struct {
	sync.Mutex
	list []*pairStealTask
}

func getStealTask() *pairStealTask {
	stealFree.Lock()
	defer stealFree.Unlock()
	if n := len(stealFree.list); n > 0 {
		t := stealFree.list[n-1]
		stealFree.list = stealFree.list[:n-1]
		return t
	}
	return new(pairStealTask)
}

func putStealTask(t *pairStealTask) {
	stealFree.Lock()
	stealFree.list = append(stealFree.list, t)
	stealFree.Unlock()
}
