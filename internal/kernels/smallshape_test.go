package kernels

import (
	"fmt"
	"math"
	"math/rand"
	"sync"
	"testing"
)

// TestRowChunkEvenShares: the row chunks of the m-split are whole tiles of
// at most mc rows, and the busiest thread (threads claiming chunks in turn)
// computes no more tiles than any chunk size could give it, ⌈tiles/threads⌉
// where some chunk size reaches that. m = 384 with 14-row tiles (28 tiles)
// is the small model's case: 7 chunks of 4 tiles put 16 on one thread and
// 12 on the other (the rule before 28 Nov 2026 failed here); 4 of 7 give
// each 14.
func TestRowChunkEvenShares(t *testing.T) {
	// busiest is the tiles of the busiest thread for chunks of t tiles.
	busiest := func(tiles, t, threads int) int {
		load := make([]int, threads)
		for i, s := 0, 0; s < tiles; i, s = i+1, s+t {
			load[i%threads] += min(t, tiles-s)
		}
		return load[0]
	}
	for _, tc := range []struct{ m, mr, mc, threads, want int }{
		{384, 14, 168, 2, 98}, // the small model: 4 chunks of 7 tiles
		{768, 14, 168, 2, 98}, // 8 chunks: 28 and 27 tiles
		{14, 14, 168, 2, 14},
		{1, 14, 168, 2, 14},
	} {
		if got := rowChunk(tc.m, tc.mr, tc.mc, tc.threads); got != tc.want {
			t.Errorf("rowChunk(m %d, mr %d, mc %d, threads %d) = %d, want %d", tc.m, tc.mr, tc.mc, tc.threads, got, tc.want)
		}
	}
	for _, kn := range []struct{ mr, mc int }{{14, 168}, {6, 144}, {4, 128}} {
		for threads := 2; threads <= 4; threads++ {
			for m := 1; m <= 3000; m += 7 {
				c := rowChunk(m, kn.mr, kn.mc, threads)
				if c%kn.mr != 0 || c < kn.mr || c > kn.mc {
					t.Fatalf("m %d mr %d mc %d threads %d: chunk %d rows, want whole tiles in [mr, mc]", m, kn.mr, kn.mc, threads, c)
				}
				tiles := (m + kn.mr - 1) / kn.mr
				best := tiles
				for tt := 1; tt <= kn.mc/kn.mr; tt++ {
					best = min(best, busiest(tiles, tt, threads))
				}
				if got := busiest(tiles, c/kn.mr, threads); got != best {
					t.Fatalf("m %d mr %d threads %d: chunk of %d tiles leaves %d on the busiest thread, %d is possible", m, kn.mr, threads, c/kn.mr, got, best)
				}
			}
		}
	}
}

// smallShapeCases are the products of the small model's linear layers
// (M = 384 rows; K and N from 128, 256, 384, 768) in the three layouts the
// model runs, plus ragged neighbours (one row or column more or less, an
// odd depth), alpha/beta variations and beta = 0 over NaN.
func smallShapeCases() []gemmCase {
	var cs []gemmCase
	for i, s := range [][3]int{ // m, n, k
		{384, 384, 128}, {384, 128, 128}, {384, 768, 128}, {384, 128, 384}, {384, 256, 128}, // forward
		{384, 128, 768}, {384, 384, 128}, {768, 128, 384}, {128, 384, 384}, // dX, dW
		{383, 385, 127}, {385, 97, 129}, {29, 770, 5}, {397, 64, 512}, {384, 64, 513},
	} {
		for ly := 0; ly < 3; ly++ { // NT, NN, TN
			tA, tB := ly == 2, ly == 0
			ab := [][2]float32{{1, 0}, {1, 1}, {-0.5, 0.25}}[(i+ly)%3]
			cs = append(cs, gemmCase{tA, tB, s[0], s[1], s[2], ab[0], ab[1], (i + ly) % 2 * 5})
		}
	}
	return cs
}

// TestSgemmSmallModelShapes: every product of the small model matches the
// float64 reference (C's padding untouched, C not read when beta = 0), and
// on two threads, with the column split of small products (nsplitMaxA) on
// and off, equals the one-thread result bit for bit. The active kernel
// runs every case; the others (slower, not used on this CPU) the ragged ones.
func TestSgemmSmallModelShapes(t *testing.T) {
	active := kern
	forEachImpl(t, func(t *testing.T) {
		savedA := nsplitMaxA
		t.Cleanup(func() { nsplitMaxA = savedA })
		for i, tc := range smallShapeCases() {
			if kern != active && tc.m%2 == 0 && tc.n%2 == 0 {
				continue
			}
			r := rand.New(rand.NewSource(int64(i)))
			a, b, c, lda, ldb, ldc := gemmOperands(r, tc)
			setTestThreads(t, 1)
			checkGemm(t, rand.New(rand.NewSource(int64(i))), tc)
			want := append([]float32(nil), c...)
			Sgemm(tc.tA, tc.tB, tc.m, tc.n, tc.k, tc.alpha, a, lda, b, ldb, tc.beta, want, ldc)
			for _, maxA := range []int{savedA, 0} {
				setTestThreads(t, 2)
				nsplitMaxA = maxA
				got := append([]float32(nil), c...)
				Sgemm(tc.tA, tc.tB, tc.m, tc.n, tc.k, tc.alpha, a, lda, b, ldb, tc.beta, got, ldc)
				for j := range got {
					if math.Float32bits(got[j]) != math.Float32bits(want[j]) && !(math.IsNaN(float64(got[j])) && math.IsNaN(float64(want[j]))) {
						t.Fatalf("%v threads 2 nsplitMaxA %d: C[%d] = %v, one thread gives %v", tc, maxA, j, got[j], want[j])
					}
				}
			}
		}
	})
}

// TestSgemmConcurrentSmallProducts runs the small model's products from
// several goroutines at once — plain products, which find the pool busy
// and run inline, and side-by-side pairs — and checks each result equals
// the same product computed alone, bit for bit.
func TestSgemmConcurrentSmallProducts(t *testing.T) {
	setTestThreads(t, 2)
	savedMin := pairMinFlops
	t.Cleanup(func() { pairMinFlops = savedMin })
	pairMinFlops = 1
	r := rand.New(rand.NewSource(3))
	type job struct {
		x, y         GemmArgs
		wantX, wantY []float32
	}
	mk := func(N, in, out int) job {
		dy, x, w := randVec(r, N*out), randVec(r, N*in), randVec(r, out*in)
		j := job{
			x: GemmArgs{M: N, N: in, K: out, Alpha: 1, A: dy, Lda: out, B: w, Ldb: in, C: make([]float32, N*in), Ldc: in},
			y: GemmArgs{TransA: true, M: out, N: in, K: N, Alpha: 1, A: dy, Lda: out, B: x, Ldb: in, Beta: 1, C: randVec(r, out*in), Ldc: in},
		}
		wx, wy := j.x, j.y
		wx.C, wy.C = make([]float32, len(j.x.C)), append([]float32(nil), j.y.C...)
		wx.Sgemm()
		wy.Sgemm()
		j.wantX, j.wantY = wx.C, wy.C
		return j
	}
	jobs := []job{mk(384, 128, 384), mk(384, 128, 768), mk(96, 384, 128), mk(67, 128, 128)}
	const workers, rounds = 4, 6
	var wg sync.WaitGroup
	errs := make(chan error, workers*rounds*len(jobs))
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for round := 0; round < rounds; round++ {
				for i, j := range jobs {
					x, y := j.x, j.y
					x.C, y.C = make([]float32, len(j.x.C)), append([]float32(nil), j.y.C...)
					if (w+round)%2 == 0 {
						SgemmPair(x, y)
					} else {
						x.Sgemm()
						y.Sgemm()
					}
					for name, p := range map[string][2][]float32{"dx": {x.C, j.wantX}, "dW": {y.C, j.wantY}} {
						for e := range p[0] {
							if math.Float32bits(p[0][e]) != math.Float32bits(p[1][e]) {
								errs <- fmt.Errorf("worker %d round %d job %d %s: C[%d] = %v, alone %v", w, round, i, name, e, p[0][e], p[1][e])
								break
							}
						}
					}
				}
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// TestSmallForwardOnePoolJob: on two threads each forward product of the
// small model (y = x·Wᵀ, x read in place, one kc slice) runs as one pool
// job — the column split, each thread packing its own strips of Wᵀ — where
// the row split ran two (pack the panel of Wᵀ, then the row blocks), and
// its result equals the row split's bit for bit.
func TestSmallForwardOnePoolJob(t *testing.T) {
	if kern.rowsFn == nil {
		t.Skip("no in-place op(A) for this kernel")
	}
	setTestThreads(t, 2)
	savedF, savedA := serialFlops, nsplitMaxA
	t.Cleanup(func() { nsplitMaxA = savedA })
	serialFlops = savedF // the products are above it, as in the model
	r := rand.New(rand.NewSource(5))
	for _, l := range smallLinears {
		const rows = 384
		x, w := randVec(r, rows*l.in), randVec(r, l.out*l.in)
		var got [2][]float32
		for i, maxA := range []int{savedA, 0} {
			nsplitMaxA = maxA
			y := make([]float32, rows*l.out)
			p := currentPool()
			before := p.epoch
			Sgemm(false, true, rows, l.out, l.in, 1, x, l.in, w, l.in, 0, y, l.out)
			jobs := p.epoch - before
			if maxA > 0 && jobs != 1 {
				t.Errorf("%s forward (%d×%d×%d): %d pool jobs, want 1", l.name, rows, l.out, l.in, jobs)
			}
			got[i] = y
		}
		for j := range got[0] {
			if math.Float32bits(got[0][j]) != math.Float32bits(got[1][j]) {
				t.Fatalf("%s forward: y[%d] = %v with the column split, %v with the row split", l.name, j, got[0][j], got[1][j])
			}
		}
	}
}

// TestSgemmTileOrderAndKernelsBitIdentical: every product of the small
// model, and its ragged neighbours, gives the same C bit for bit whichever
// order the macro-kernel runs its tiles in (rows of tiles first, as for
// small panels of op(B), or columns first) and whether the 14×32 kernel
// specialised in A's layout or the general one computes them, on one
// thread and on two.
func TestSgemmTileOrderAndKernelsBitIdentical(t *testing.T) {
	savedR, savedS := rowsOuterMaxB, specA14
	t.Cleanup(func() { rowsOuterMaxB, specA14 = savedR, savedS })
	for i, tc := range smallShapeCases() {
		r := rand.New(rand.NewSource(int64(i)))
		a, b, c, lda, ldb, ldc := gemmOperands(r, tc)
		var want []float32
		for v, cfg := range []struct {
			maxB    int
			spec    bool
			threads int
		}{{0, false, 1}, {savedR, savedS, 1}, {1 << 30, true, 1}, {0, true, 2}, {1 << 30, false, 2}} {
			rowsOuterMaxB, specA14 = cfg.maxB, cfg.spec
			setTestThreads(t, cfg.threads)
			got := append([]float32(nil), c...)
			Sgemm(tc.tA, tc.tB, tc.m, tc.n, tc.k, tc.alpha, a, lda, b, ldb, tc.beta, got, ldc)
			if v == 0 {
				want = got
				continue
			}
			for j := range got {
				if math.Float32bits(got[j]) != math.Float32bits(want[j]) && !(math.IsNaN(float64(got[j])) && math.IsNaN(float64(want[j]))) {
					t.Fatalf("%v with %+v: C[%d] = %v, columns first with the general kernel give %v", tc, cfg, j, got[j], want[j])
				}
			}
		}
	}
}
