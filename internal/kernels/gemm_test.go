package kernels

import (
	"fmt"
	"math"
	"math/rand"
	"strings"
	"testing"
)

// refGemm is the float64 reference; it also returns, per element of C, the
// sum of the absolute values of the terms, for the error bound.
func refGemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) (want, mag []float64) {
	want = make([]float64, m*n)
	mag = make([]float64, m*n)
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			var s, sa float64
			for p := 0; p < k; p++ {
				var av, bv float32
				if transA {
					av = a[p*lda+i]
				} else {
					av = a[i*lda+p]
				}
				if transB {
					bv = b[j*ldb+p]
				} else {
					bv = b[p*ldb+j]
				}
				s += float64(av) * float64(bv)
				sa += math.Abs(float64(av) * float64(bv))
			}
			w := float64(alpha) * s
			mg := math.Abs(float64(alpha)) * sa
			if beta != 0 {
				w += float64(beta) * float64(c[i*ldc+j])
				mg += math.Abs(float64(beta) * float64(c[i*ldc+j]))
			}
			want[i*n+j], mag[i*n+j] = w, mg
		}
	}
	return want, mag
}

type gemmCase struct {
	tA, tB      bool
	m, n, k     int
	alpha, beta float32
	pad         int // extra columns in every leading dimension
}

func (tc gemmCase) String() string {
	l := map[bool]string{false: "N", true: "T"}
	return fmt.Sprintf("%s%s_m%d_n%d_k%d_a%g_b%g_pad%d", l[tc.tA], l[tc.tB], tc.m, tc.n, tc.k, tc.alpha, tc.beta, tc.pad)
}

// checkGemm runs Sgemm on random inputs and compares with refGemm. C starts
// as NaN when beta == 0 (Sgemm must not read it), and the padding columns of
// C must stay untouched.
func checkGemm(t *testing.T, r *rand.Rand, tc gemmCase) {
	t.Helper()
	a, b, c, lda, ldb, ldc := gemmOperands(r, tc)
	c0 := append([]float32(nil), c...)
	want, mag := refGemm(tc.tA, tc.tB, tc.m, tc.n, tc.k, tc.alpha, a, lda, b, ldb, tc.beta, c0, ldc)
	Sgemm(tc.tA, tc.tB, tc.m, tc.n, tc.k, tc.alpha, a, lda, b, ldb, tc.beta, c, ldc)
	tol := 2 * float64(tc.k+4) * 6e-8
	for i := 0; i < tc.m; i++ {
		for j := 0; j < ldc; j++ {
			got := c[i*ldc+j]
			if j >= tc.n {
				if math.Float32bits(got) != math.Float32bits(c0[i*ldc+j]) {
					t.Fatalf("%v [%s]: padding C[%d,%d] changed to %v", tc, Impl(), i, j, got)
				}
				continue
			}
			w, mg := want[i*tc.n+j], mag[i*tc.n+j]
			if d := math.Abs(float64(got) - w); !(d <= tol*mg+1e-30) {
				t.Fatalf("%v [%s threads %d]: C[%d,%d] = %v, want %v (|err| %.3g > %.3g)", tc, Impl(), Threads(), i, j, got, w, d, tol*mg)
			}
		}
	}
}

// setTestThreads sets the pool size and, for more than one thread, lets even
// tiny products take the parallel paths; both are restored when t ends.
func setTestThreads(t *testing.T, threads int) {
	savedT, savedF, savedP := Threads(), serialFlops, serialPack
	t.Cleanup(func() { SetThreads(savedT); serialFlops, serialPack = savedF, savedP })
	SetThreads(threads)
	if threads > 1 {
		serialFlops, serialPack = 0, 0
	} else {
		serialFlops, serialPack = savedF, savedP
	}
}

// forEachImpl runs f with every implementation this CPU supports selected.
func forEachImpl(t *testing.T, f func(t *testing.T)) {
	saved := kern
	defer useKernel(saved)
	for _, k := range kernelsAvailable() {
		useKernel(k)
		t.Run(k.name, f)
	}
}

func TestSgemmSmallShapes(t *testing.T) {
	dims := []int{1, 2, 3, 5, 13, 14, 15, 17, 31, 32, 33}
	forEachImpl(t, func(t *testing.T) {
		for _, threads := range []int{1, 2} {
			setTestThreads(t, threads)
			r := rand.New(rand.NewSource(int64(threads)))
			for _, tA := range []bool{false, true} {
				for _, tB := range []bool{false, true} {
					for _, m := range dims {
						for _, n := range dims {
							k := dims[(m*7+n*3)%len(dims)]
							ab := [][2]float32{{1, 0}, {0.5, 1}, {-2, 0.25}}[(m+n)%3]
							checkGemm(t, r, gemmCase{tA, tB, m, n, k, ab[0], ab[1], (m + n) % 3})
						}
					}
				}
			}
		}
	})
}

// TestSgemmBlockEdges uses shapes that cross the kc, mc and nc blocking and
// the parallel split thresholds of every kernel.
func TestSgemmBlockEdges(t *testing.T) {
	forEachImpl(t, func(t *testing.T) {
		kn := kern
		shapes := [][3]int{
			{1, 1, 1}, {1, 300, 7}, {300, 1, 7}, {1, 1, 600}, {1, 700, 1},
			{kn.mr*4 + 1, kn.nr*2 - 1, kn.kc + 1},
			{kn.mc + kn.mr + 3, 2*kn.nr + 5, 2*kn.kc + 3},
			{97, 89, 263}, {2 * kn.mc, 3 * kn.nr, kn.kc},
			{3, kn.nr*9 + 3, 67},              // n-split
			{kn.mr * 2, kn.nc + kn.nr + 1, 9}, // crosses nc
			{127, 131, 1},
		}
		for _, threads := range []int{1, 2} {
			setTestThreads(t, threads)
			r := rand.New(rand.NewSource(7))
			for i, s := range shapes {
				for ly := 0; ly < 4; ly++ {
					ab := [][2]float32{{1, 0}, {1, 1}, {0.5, -1.5}}[(i+ly)%3]
					checkGemm(t, r, gemmCase{ly&1 == 1, ly&2 == 2, s[0], s[1], s[2], ab[0], ab[1], (i + ly) % 2 * 3})
				}
			}
		}
	})
}

func TestSgemmDegenerate(t *testing.T) {
	// k == 0 or alpha == 0: C = beta·C, and C not read when beta == 0.
	c := []float32{float32(math.NaN()), 2, 3, 4}
	Sgemm(false, false, 2, 2, 0, 1, nil, 1, nil, 2, 0, c, 2)
	for i, v := range c {
		if v != 0 {
			t.Fatalf("k=0 beta=0: c[%d] = %v", i, v)
		}
	}
	c = []float32{1, 2, 3, 4}
	Sgemm(false, false, 2, 2, 3, 0, make([]float32, 6), 3, make([]float32, 6), 2, 2, c, 2)
	for i, v := range c {
		if v != float32(2*(i+1)) {
			t.Fatalf("alpha=0 beta=2: c[%d] = %v", i, v)
		}
	}
	Sgemm(false, false, 0, 5, 5, 1, nil, 5, nil, 5, 0, nil, 5) // m == 0: no-op
}

// TestMicroKernelsMatchRef checks every micro-kernel against the scalar twin,
// for several depths and beta values, writing into a wider C.
func TestMicroKernelsMatchRef(t *testing.T) {
	r := rand.New(rand.NewSource(3))
	for _, kn := range kernelsAvailable() {
		ref := kernelRef(kn.mr, kn.nr)
		for _, k := range []int{1, 2, 3, 4, 5, 7, 8, 9, 16, 17, 255, 256} {
			for bi, beta := range []float32{0, 1, -0.5} {
				// Both A layouts: k-major strip, and row copies of stride k+3.
				rs, cs := 1, kn.mr
				if bi != 1 {
					rs, cs = k+3, 1
				}
				ap, bp := randVec(r, (kn.mr-1)*rs+(k-1)*cs+1), randVec(r, k*kn.nr)
				ldc := kn.nr + 3
				c := randVec(r, kn.mr*ldc)
				if beta == 0 {
					for i := range c {
						c[i] = float32(math.NaN())
					}
				}
				want := append([]float32(nil), c...)
				ref(k, ap, rs, cs, bp, want, ldc, 1.25, beta)
				kn.fn(k, ap, rs, cs, bp, c, ldc, 1.25, beta)
				for i := range c {
					w, g := float64(want[i]), float64(c[i])
					if i%ldc >= kn.nr {
						if math.Float32bits(c[i]) != math.Float32bits(want[i]) {
							t.Fatalf("%s k=%d: wrote outside the tile at %d", kn.name, k, i)
						}
						continue
					}
					if math.Abs(g-w) > 1e-5*float64(k)*(1+math.Abs(w)) {
						t.Fatalf("%s k=%d beta=%v: c[%d] = %v, want %v", kn.name, k, beta, i, g, w)
					}
				}
			}
		}
	}
}

func TestSgemmNoAllocs(t *testing.T) {
	r := rand.New(rand.NewSource(5))
	m, n, k := 301, 203, 260
	a, b, c := randVec(r, m*k), randVec(r, k*n), make([]float32, m*n)
	forEachImpl(t, func(t *testing.T) {
		for _, threads := range []int{1, 2} {
			setTestThreads(t, threads)
			for ly := 0; ly < 4; ly++ {
				tA, tB := ly&1 == 1, ly&2 == 2
				lda, ldb := k, n
				if tA {
					lda = m
				}
				if tB {
					ldb = k
				}
				// A 2×(3n)×5 product takes the n-split path.
				lda2, ldb2 := 5, n*3
				if tA {
					lda2 = 2
				}
				if tB {
					ldb2 = 5
				}
				Sgemm(tA, tB, m, n, k, 1, a, lda, b, ldb, 0, c, n) // warm up buffers
				allocs := testing.AllocsPerRun(5, func() {
					Sgemm(tA, tB, m, n, k, 1, a, lda, b, ldb, 0.5, c, n)
					Sgemm(tA, tB, 2, n*3, 5, 1, a, lda2, b, ldb2, 0, c, n*3)
				})
				if allocs != 0 {
					t.Fatalf("threads %d layout %d: %v allocations per Sgemm", threads, ly, allocs)
				}
			}
		}
	})
}

func TestSelectKernel(t *testing.T) {
	avail := kernelsAvailable()
	if got := selectKernel(""); got != avail[0] {
		t.Fatalf("default kernel %s, want the best available %s", got.name, avail[0].name)
	}
	for _, k := range avail {
		if got := selectKernel(k.name); got != k {
			t.Fatalf("KESTREL_GEMM=%s selected %s", k.name, got.name)
		}
	}
	if got := selectKernel("no-such-kernel"); got != avail[0] {
		t.Fatalf("unknown name selected %s, want %s", got.name, avail[0].name)
	}
	if avail[len(avail)-1] != kernelGo {
		t.Fatalf("the pure-Go kernel must always be available")
	}
}

// TestEdgeKernelsMatchRef checks the short-tile kernels (rows < mr) against
// the scalar twin; they must not touch rows past their height.
func TestEdgeKernelsMatchRef(t *testing.T) {
	r := rand.New(rand.NewSource(4))
	for _, kn := range kernelsAvailable() {
		if kn.rowsFn == nil {
			continue
		}
		for rows := 1; rows < kn.mr; rows++ {
			for _, k := range []int{1, 5, 64} {
				ref := kernelRef(rows, kn.nr)
				rs, cs := k+2, 1
				if rows%2 == 0 {
					rs, cs = 1, kmajorStride(kn.mr)
				}
				ap, bp := randVec(r, (rows-1)*rs+(k-1)*cs+1), randVec(r, k*kn.nr)
				ldc := kn.nr + 1
				c := randVec(r, (rows+1)*ldc)
				want := append([]float32(nil), c...)
				beta := float32(rows%3) * 0.5
				ref(k, ap, rs, cs, bp, want, ldc, -0.75, beta)
				kn.rowsFn(rows, k, ap, rs, cs, bp, c, ldc, -0.75, beta)
				for i := range c {
					if i%ldc >= kn.nr || i >= rows*ldc {
						if c[i] != want[i] {
							t.Fatalf("%s rows=%d k=%d: wrote outside the tile at %d", kn.name, rows, k, i)
						}
						continue
					}
					if d := math.Abs(float64(c[i] - want[i])); d > 1e-5*float64(k)*(1+math.Abs(float64(want[i]))) {
						t.Fatalf("%s rows=%d k=%d: c[%d] = %v, want %v", kn.name, rows, k, i, c[i], want[i])
					}
				}
			}
		}
	}
}

func TestSgemmBadOperandsPanicOnCaller(t *testing.T) {
	cases := []struct {
		name string
		f    func()
	}{
		{"short C", func() {
			Sgemm(false, false, 2, 2, 2, 1, make([]float32, 4), 2, make([]float32, 4), 2, 0, make([]float32, 3), 2)
		}},
		{"A stride", func() {
			Sgemm(false, false, 2, 2, 3, 1, make([]float32, 6), 2, make([]float32, 6), 2, 0, make([]float32, 4), 2)
		}},
		{"short Bt", func() {
			Sgemm(false, true, 2, 3, 2, 1, make([]float32, 4), 2, make([]float32, 5), 2, 0, make([]float32, 6), 3)
		}},
	}
	for _, tc := range cases {
		func() {
			defer func() {
				if r := recover(); r == nil {
					t.Errorf("%s: no panic", tc.name)
				} else if !strings.Contains(fmt.Sprint(r), "kernels.Sgemm") {
					t.Errorf("%s: panic %v does not name Sgemm", tc.name, r)
				}
			}()
			tc.f()
		}()
	}
}

// TestUseImplAndGemmKC: UseImpl switches to every available implementation
// and back, GemmKC follows it, and an unknown name is an error that
// changes nothing.
func TestUseImplAndGemmKC(t *testing.T) {
	saved := kern
	defer useKernel(saved)
	for _, k := range kernelsAvailable() {
		prev, err := UseImpl(k.name)
		if err != nil {
			t.Fatalf("UseImpl(%q): %v", k.name, err)
		}
		if Impl() != k.name || GemmKC() != k.kc {
			t.Fatalf("after UseImpl(%q) (from %q): Impl %q, GemmKC %d, want %q, %d", k.name, prev, Impl(), GemmKC(), k.name, k.kc)
		}
	}
	before := Impl()
	if _, err := UseImpl("no-such-kernel"); err == nil || !strings.Contains(err.Error(), "no-such-kernel") {
		t.Fatalf("UseImpl(no-such-kernel): %v, want an error naming it", err)
	}
	if Impl() != before {
		t.Fatalf("a failed UseImpl changed the implementation to %q", Impl())
	}
	if got := ImplsAvailable(); got[len(got)-1] != "go" {
		t.Fatalf("ImplsAvailable %v: the pure-Go kernel must come last", got)
	}
}

// gemmOperands draws tc's random A, B and C with their strides (rows
// tc.pad floats longer than the matrix); C is all NaN when tc.beta == 0,
// since the product must not read it then.
func gemmOperands(r *rand.Rand, tc gemmCase) (a, b, c []float32, lda, ldb, ldc int) {
	ar, ac := tc.m, tc.k
	if tc.tA {
		ar, ac = tc.k, tc.m
	}
	br, bc := tc.k, tc.n
	if tc.tB {
		br, bc = tc.n, tc.k
	}
	lda, ldb, ldc = ac+tc.pad, bc+tc.pad, tc.n+tc.pad
	a = randVec(r, max(ar*lda, 1))
	b = randVec(r, max(br*ldb, 1))
	c = randVec(r, tc.m*ldc)
	if tc.beta == 0 {
		for i := range c {
			c[i] = float32(math.NaN())
		}
	}
	return a, b, c, lda, ldb, ldc
}
