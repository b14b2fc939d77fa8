package kernels

import (
	"math"
	"math/rand"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// amxProblem is one SgemmBF16 call of the stress test with its inputs and
// the result a serial run gave.
type amxProblem struct {
	tc      gemmCase
	a, b    []float32
	lda     int
	ldb     int
	c0      []float32 // C before the call
	want    []float32 // C after the serial call
	fp32    bool      // run with Sgemm (AVX-512) instead: the other work
	ldc     int
	threads int
}

func (p *amxProblem) run(c []float32) {
	copy(c, p.c0)
	gemm := SgemmBF16
	if p.fp32 {
		gemm = Sgemm
	}
	gemm(p.tc.tA, p.tc.tB, p.tc.m, p.tc.n, p.tc.k, p.tc.alpha, p.a, p.lda, p.b, p.ldb, p.tc.beta, c, p.ldc)
}

// TestAMXConcurrentStress is the evidence that AMX tile state survives
// everything the Go runtime does around the kernel: 8 goroutines run AMX
// GEMMs (every store path, full and ragged tiles, several kc slices) and
// AVX-512 float32 GEMMs in shuffled order on the worker pool, beside a
// goroutine forcing garbage collections, goroutines yielding and one
// spinning without calls (so that preemption signals land on threads while
// they run tiles), and every result must equal, bit for bit, the one the
// same call gave when run alone. It skips on a CPU without AMX-BF16.
func TestAMXConcurrentStress(t *testing.T) {
	if !slices.Contains(BF16ImplsAvailable(), "amx") {
		t.Skip("no AMX-BF16 here (CPU without amx_bf16/amx_tile, or the tile state was refused)")
	}
	prev, err := UseBF16Impl("amx")
	if err != nil {
		t.Fatal(err)
	}
	defer UseBF16Impl(prev)
	setTestThreads(t, 2)
	r := rand.New(rand.NewSource(11))
	var probs []*amxProblem
	for i, s := range [][3]int{{128, 96, 700}, {96, 160, 1025}, {45, 77, 333}, {64, 64, 64}, {200, 40, 129}, {100, 100, 300}} {
		ab := [][2]float32{{1, 0}, {-0.5, 1.5}, {1, 1}, {2, 0}}[i%4]
		for _, fp32 := range []bool{false, true} {
			tc := gemmCase{tA: i%2 == 1, tB: i%3 == 1, m: s[0], n: s[1], k: s[2], alpha: ab[0], beta: ab[1]}
			p := &amxProblem{tc: tc, fp32: fp32, lda: tc.k, ldb: tc.n, ldc: tc.n}
			if tc.tA {
				p.lda = tc.m
			}
			if tc.tB {
				p.ldb = tc.k
			}
			p.a, p.b = randVec(r, tc.m*tc.k), randVec(r, tc.k*tc.n)
			p.c0 = randVec(r, tc.m*tc.n)
			p.want = make([]float32, len(p.c0))
			p.run(p.want)
			probs = append(probs, p)
		}
	}
	stop := make(chan struct{})
	var bg sync.WaitGroup
	var spins atomic.Int64
	bg.Add(2)
	go func() { // garbage collections
		defer bg.Done()
		for {
			select {
			case <-stop:
				return
			default:
				runtime.GC()
				time.Sleep(time.Millisecond)
			}
		}
	}()
	go func() { // a loop without calls: only an asynchronous preemption (a signal) stops it
		defer bg.Done()
		x := uint64(1)
		for {
			for i := 0; i < 1<<20; i++ {
				x = x*6364136223846793005 + 1442695040888963407
			}
			spins.Add(int64(x & 1))
			select {
			case <-stop:
				return
			default:
			}
		}
	}()
	var wg sync.WaitGroup
	var bad atomic.Int64
	var runs atomic.Int64
	deadline := time.Now().Add(1500 * time.Millisecond)
	for g := range 8 {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			rg := rand.New(rand.NewSource(int64(g)))
			bufs := make([][]float32, len(probs))
			for i, p := range probs {
				bufs[i] = make([]float32, len(p.c0))
			}
			for time.Now().Before(deadline) {
				for _, i := range rg.Perm(len(probs)) {
					p := probs[i]
					p.run(bufs[i])
					runs.Add(1)
					for j, v := range bufs[i] {
						if math.Float32bits(v) != math.Float32bits(p.want[j]) {
							if bad.Add(1) == 1 {
								t.Errorf("goroutine %d, %v fp32 %v: C[%d] = %v, the serial run gave %v", g, p.tc, p.fp32, j, v, p.want[j])
							}
							break
						}
					}
					if rg.Intn(3) == 0 {
						runtime.Gosched()
					}
				}
			}
		}(g)
	}
	wg.Wait()
	close(stop)
	bg.Wait()
	if bad.Load() > 0 {
		t.Fatalf("%d of %d concurrent results differ from the serial ones", bad.Load(), runs.Load())
	}
	if runs.Load() < int64(len(probs)) {
		t.Fatalf("only %d runs", runs.Load())
	}
	t.Logf("%d concurrent GEMMs (half AMX) matched the serial results bit for bit", runs.Load())
}
