package kernels

import (
	"sync"
	"time"
)

// GemmArgs are the operands of one Sgemm call, as Sgemm takes them.
type GemmArgs struct {
	TransA, TransB bool
	M, N, K        int
	Alpha          float32
	A              []float32
	Lda            int
	B              []float32
	Ldb            int
	Beta           float32
	C              []float32
	Ldc            int
	BF16           bool // round A and B to bfloat16 first, as SgemmBF16 does
}

// pairMaxFlops bounds the products SgemmPair runs side by side (m·n·k of
// each): a product this large already keeps two threads busy on its own,
// and running the two whole on one thread each would leave the faster
// one's thread idle while the slower finishes. Below it, the products of
// a small model's backward pass (m·n·k of 0.1–0.8·10⁹ for ref7m's weight
// and input gradients) scale 1.73–1.95× on two threads each, losing the
// rest to the pool's barriers and shared packing; side by side, ref7m's
// forward + backward ran 2.3% faster on two threads (median of 8
// alternating pairs, 7 of them faster).
var pairMaxFlops = 1 << 30

// pairMinFlops: below this (m·n·k of each) the pair runs one after the
// other; Sgemm runs such products on one thread anyway (serialFlops).
var pairMinFlops = serialFlops

// SgemmPair computes two independent products, x and y (neither may write
// what the other reads or writes). On exactly two threads, when both are
// mid-sized (see pairMaxFlops), each runs whole on its own thread — no
// pool barriers, no packing shared between threads; otherwise they run one
// after the other, each on every thread. The results are the same bit for
// bit either way, since Sgemm's result never depends on the thread count.
func SgemmPair(x, y GemmArgs) {
	fx, fy := x.M*x.N*x.K, y.M*y.N*y.K
	if Threads() != 2 || min(fx, fy) < pairMinFlops || max(fx, fy) > pairMaxFlops {
		x.run(false)
		y.run(false)
		return
	}
	t := getPairTask()
	t.g[0], t.g[1] = x, y
	// Profiled, each product adds its own wall time (one thread each);
	// the pair adds the rest of its two threads' time: the faster
	// product's thread waiting for the slower.
	t0 := profStart()
	var before int64
	if !t0.IsZero() {
		before = gprof.total.Load()
	}
	ParallelForTask(2, 1, t)
	if !t0.IsZero() {
		gprof.total.Add(2*int64(time.Since(t0)) - (gprof.total.Load() - before))
	}
	t.g = [2]GemmArgs{}
	putPairTask(t)
}

// Sgemm computes the product: Sgemm with g's operands.
func (g *GemmArgs) Sgemm() { g.run(false) }

func (g *GemmArgs) run(serial bool) {
	if g.BF16 {
		sgemmBF16(serial, g.TransA, g.TransB, g.M, g.N, g.K, g.Alpha, g.A, g.Lda, g.B, g.Ldb, g.Beta, g.C, g.Ldc)
		return
	}
	sgemm(serial, g.TransA, g.TransB, g.M, g.N, g.K, g.Alpha, g.A, g.Lda, g.B, g.Ldb, g.Beta, g.C, g.Ldc)
}

// gemmPairTask runs product i of the pair on one thread.
type gemmPairTask struct{ g [2]GemmArgs }

func (t *gemmPairTask) Run(s, e int) {
	for i := s; i < e; i++ {
		t.g[i].run(true)
	}
}

// pairFree recycles the pair tasks (a plain free list: a sync.Pool may
// drop what is put back, and then a steady-state pair would allocate).
var pairFree struct {
	sync.Mutex
	list []*gemmPairTask
}

func getPairTask() *gemmPairTask {
	pairFree.Lock()
	defer pairFree.Unlock()
	if n := len(pairFree.list); n > 0 {
		t := pairFree.list[n-1]
		pairFree.list = pairFree.list[:n-1]
		return t
	}
	return new(gemmPairTask)
}

func putPairTask(t *gemmPairTask) {
	pairFree.Lock()
	pairFree.list = append(pairFree.list, t)
	pairFree.Unlock()
}
