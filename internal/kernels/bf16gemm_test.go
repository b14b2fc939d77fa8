package kernels

import (
	"fmt"
	"math"
	"math/rand"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
)

// kernelBF16GoRef is a pure-Go bf16 micro-kernel (4×8 tile, small blocks)
// for tests: it reads the packed pairs as the assembly reads them, so the
// bf16 packing and the blocking run (and are checked) on any CPU.
var kernelBF16GoRef = &gemmKernel{name: "gobf16", bf16: true, mr: 4, nr: 8, kc: 10, mc: 12, nc: 24, fn: func(k int, ap []float32, rs, cs int, bp, c []float32, ldc int, alpha, beta float32) {
	lo := func(x float32) float32 { return math.Float32frombits(math.Float32bits(x) << 16) }
	hi := func(x float32) float32 { return math.Float32frombits(math.Float32bits(x) &^ 0xffff) }
	for i := range 4 {
		for j := range 8 {
			var s float32
			for q := range k {
				a, b := ap[i*rs+q*cs], bp[q*8+j]
				s += hi(a)*hi(b) + lo(a)*lo(b)
			}
			if beta == 0 {
				c[i*ldc+j] = alpha * s
			} else {
				c[i*ldc+j] = alpha*s + beta*c[i*ldc+j]
			}
		}
	}
}}

// forEachBF16Impl runs f with every bf16 implementation this CPU runs
// selected, the test kernel kernelBF16GoRef and the reference ("ref").
func forEachBF16Impl(t *testing.T, f func(t *testing.T)) {
	saved := kernBF16
	defer useBF16Kernel(saved)
	for _, k := range append(bf16KernelsAvailable(), kernelBF16GoRef, nil) {
		useBF16Kernel(k)
		t.Run(implName(k), f)
	}
}

// checkGemmBF16 runs SgemmBF16 on random inputs and compares it with the
// float64 product of the bf16-rounded inputs. The products of two bf16
// are exact in float32, so the result may differ from that only by the
// float32 sums (in whatever order the kernel adds them, VDPBF16PS adding
// two products before the accumulator): the bound is checkGemm's, the
// float32 summation bound of k terms, relative to Σ|terms|. C starts as
// NaN when beta == 0 (it must not be read) and its padding must not change.
func checkGemmBF16(t *testing.T, r *rand.Rand, tc gemmCase) {
	t.Helper()
	a, b, c, lda, ldb, ldc := gemmOperands(r, tc)
	c0 := append([]float32(nil), c...)
	ra, rb := make([]float32, len(a)), make([]float32, len(b))
	RoundBF16Slice(ra, a)
	RoundBF16Slice(rb, b)
	want, mag := refGemm(tc.tA, tc.tB, tc.m, tc.n, tc.k, tc.alpha, ra, lda, rb, ldb, tc.beta, c0, ldc)
	a0, b0 := append([]float32(nil), a...), append([]float32(nil), b...)
	SgemmBF16(tc.tA, tc.tB, tc.m, tc.n, tc.k, tc.alpha, a, lda, b, ldb, tc.beta, c, ldc)
	if !equalF32(a, a0) || !equalF32(b, b0) {
		t.Fatalf("%v [%s]: SgemmBF16 modified its operands", tc, BF16Impl())
	}
	tol := 2 * float64(tc.k+4) * 6e-8
	for i := 0; i < tc.m; i++ {
		for j := 0; j < ldc; j++ {
			got := c[i*ldc+j]
			if j >= tc.n {
				if math.Float32bits(got) != math.Float32bits(c0[i*ldc+j]) {
					t.Fatalf("%v [%s]: padding C[%d,%d] changed to %v", tc, BF16Impl(), i, j, got)
				}
				continue
			}
			w, mg := want[i*tc.n+j], mag[i*tc.n+j]
			if d := math.Abs(float64(got) - w); !(d <= tol*mg+1e-30) {
				t.Fatalf("%v [%s threads %d]: C[%d,%d] = %v, want %v (|err| %.3g > %.3g)", tc, BF16Impl(), Threads(), i, j, got, w, d, tol*mg)
			}
		}
	}
}

// TestSgemmBF16Impls checks every bf16 implementation against the rounded
// float64 product: every layout, odd and even k (one pair short, a single
// element, across kc slices of the test kernel, the AVX512_BF16 one and
// the AMX one, whose k is padded to 32), ragged m and n (AMX: partial
// 32×32 tiles), strides, alpha and beta through each of the AMX kernel's
// four store paths, beta = 0 over NaN,
// on one thread and on two (with the parallel paths forced: row blocks,
// column split, all slices at once).
func TestSgemmBF16Impls(t *testing.T) {
	shapes := [][3]int{{1, 1, 1}, {3, 5, 2}, {14, 32, 3}, {15, 33, 17}, {29, 65, 64}, {20, 200, 31}, {60, 70, 1101}, {170, 40, 2050},
		{96, 64, 40}, {64, 96, 513}, {32, 32, 32}, {65, 33, 1025}}
	// alpha and beta by shape: the AMX kernel has a path for each of
	// (1, 0), (1, 1), (alpha, beta) and (alpha, 0).
	ab := [][2]float32{{1, 0}, {-0.5, 1.5}, {1, 1}, {2, 0}}
	forEachBF16Impl(t, func(t *testing.T) {
		for _, threads := range []int{1, 2} {
			setTestThreads(t, threads)
			r := rand.New(rand.NewSource(7))
			for si, s := range shapes {
				for _, tr := range [][2]bool{{false, false}, {false, true}, {true, false}, {true, true}} {
					tc := gemmCase{tA: tr[0], tB: tr[1], m: s[0], n: s[1], k: s[2], alpha: ab[si%4][0], beta: ab[si%4][1], pad: si % 3}
					checkGemmBF16(t, r, tc)
				}
			}
		}
	})
}

// TestSgemmBF16Degenerate: k = 0 or alpha = 0 scale C by beta (C = 0
// without reading it when beta = 0), and an empty C is left alone.
func TestSgemmBF16Degenerate(t *testing.T) {
	forEachBF16Impl(t, func(t *testing.T) {
		nan := float32(math.NaN())
		for _, tc := range []struct {
			k           int
			alpha, beta float32
			want        float32
		}{{0, 1, 0, 0}, {0, 1, 2, 2 * nan}, {3, 0, 0, 0}} {
			c := []float32{nan, nan}
			if tc.beta != 0 {
				c = []float32{1, 1}
				tc.want = 2
			}
			SgemmBF16(false, false, 1, 2, tc.k, tc.alpha, []float32{1, 2, 3}, 3, []float32{1, 2, 3, 4, 5, 6}, 2, tc.beta, c, 2)
			if c[0] != tc.want || c[1] != tc.want {
				t.Errorf("k %d alpha %g beta %g: C = %v, want both %g", tc.k, tc.alpha, tc.beta, c, tc.want)
			}
		}
	})
}

// TestBF16PackingMatchesGo checks the assembly packers against the Go
// loops bit for bit: each strip packed by the kernel's hooks and by the Go
// code (hooks off), for odd and even kc, both layouts of A and B.
func TestBF16PackingMatchesGo(t *testing.T) {
	ks := bf16KernelsAvailable()
	if len(ks) == 0 {
		t.Skip("no bf16 kernel with packing hooks on this CPU")
	}
	r := rand.New(rand.NewSource(3))
	for _, kn := range ks {
		plain := *kn
		plain.packAT, plain.packATRows, plain.packBN, plain.packBT, plain.cvtRow = nil, nil, nil, nil, nil
		for _, kc := range []int{1, 2, 31, 32, 33, 64, 77, 1024} {
			for _, trans := range []bool{false, true} {
				mc, cols := 2*kn.mr+3, kn.nr
				x := randVec(r, (kc+mc+cols)*(kc+mc+cols+5))
				ld := kc + mc + cols + 5
				kp := kn.kdepth(kc)
				pa, pb := make([]float32, packASize(mc, kp, kn.mr)), make([]float32, packASize(mc, kp, kn.mr))
				rs1, cs1, ss1 := packA(kn, trans, x, ld, 1, 2, mc, kc, pa)
				rs2, cs2, ss2 := packA(&plain, trans, x, ld, 1, 2, mc, kc, pb)
				if rs1 != rs2 || cs1 != cs2 || ss1 != ss2 || !equalF32(pa, pb) {
					t.Fatalf("%s packA trans %v kc %d: assembly and Go packing differ", kn.name, trans, kc)
				}
				ba, bb := make([]float32, kp*cols), make([]float32, kp*cols)
				packBStrip(kn, trans, x, ld, 2, 1, kc, cols, ba)
				packBStrip(&plain, trans, x, ld, 2, 1, kc, cols, bb)
				if !equalF32(ba, bb) {
					t.Fatalf("%s packBStrip trans %v kc %d: assembly and Go packing differ", kn.name, trans, kc)
				}
			}
		}
	}
}

// TestBF16ImplSelection: KESTREL_GEMM_BF16 picks the implementation at
// start-up (ref forces the reference even where the CPU has bf16; a name
// the CPU cannot run falls back to the best), checked in a child process;
// UseBF16Impl refuses an unknown name and changes nothing.
func TestBF16ImplSelection(t *testing.T) {
	if os.Getenv("KESTREL_BF16_CHILD") == "1" {
		fmt.Printf("impl=%s\n", BF16Impl())
		return
	}
	best := BF16ImplsAvailable()[0]
	cases := []struct{ env, want string }{{"ref", "ref"}, {"", best}, {"nonesuch", best}}
	for _, name := range []string{"amx", "avx512bf16"} {
		want := best // a name this CPU cannot run falls back to the best
		if slices.Contains(BF16ImplsAvailable(), name) {
			want = name
		}
		cases = append(cases, struct{ env, want string }{name, want})
	}
	for _, c := range cases {
		cmd := exec.Command(os.Args[0], "-test.run=^TestBF16ImplSelection$")
		cmd.Env = append(os.Environ(), "KESTREL_BF16_CHILD=1", "KESTREL_GEMM_BF16="+c.env)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("child with KESTREL_GEMM_BF16=%q: %v\n%s", c.env, err, out)
		}
		if !strings.Contains(string(out), "impl="+c.want+"\n") {
			t.Errorf("KESTREL_GEMM_BF16=%q: child says %q, want impl=%s", c.env, out, c.want)
		}
	}
	prev := BF16Impl()
	if _, err := UseBF16Impl("nonesuch"); err == nil || BF16Impl() != prev {
		t.Errorf("UseBF16Impl(nonesuch): err %v, impl %s (was %s)", err, BF16Impl(), prev)
	}
	if p, err := UseBF16Impl("ref"); err != nil || BF16Impl() != "ref" {
		t.Errorf("UseBF16Impl(ref): %v, impl %s", err, BF16Impl())
	} else {
		UseBF16Impl(p)
	}
}

func TestPeakFLOPsBF16(t *testing.T) {
	flops, secs, ok := PeakFLOPsBF16(2, 5*time.Millisecond)
	if has, _ := bf16PeakLoop(); (has != nil) != ok {
		t.Fatalf("PeakFLOPsBF16 ok = %v, but the probe is available: %v", ok, has != nil)
	}
	if !ok {
		if flops != nil || secs != nil {
			t.Fatalf("no bf16 probe, but results %v %v", flops, secs)
		}
		return
	}
	if len(flops) != 2 || len(secs) != 2 {
		t.Fatalf("%d/%d results, want 2", len(flops), len(secs))
	}
	for i := range flops {
		if !(flops[i] > 0) || secs[i] < 0.005 {
			t.Errorf("thread %d: %v FLOPs in %vs", i, flops[i], secs[i])
		}
	}
}

// BenchmarkGemmBF16 times the float32 and the bf16 GEMM on the same large
// square products (b.N alternating pairs would need one benchmark; run
// with -count and compare medians). Reports GFLOP/s.
func BenchmarkGemmBF16(b *testing.B) {
	for _, threads := range []int{1, 2} {
		for _, sz := range []int{1024, 2048} {
			for _, impl := range append([]string{"fp32"}, BF16ImplsAvailable()...) {
				b.Run(fmt.Sprintf("t%d/%d/%s", threads, sz, impl), func(b *testing.B) {
					saved := Threads()
					defer SetThreads(saved)
					SetThreads(threads)
					if impl != "fp32" {
						prev, err := UseBF16Impl(impl)
						if err != nil {
							b.Fatal(err)
						}
						defer UseBF16Impl(prev)
					}
					r := rand.New(rand.NewSource(1))
					x, y, c := randVec(r, sz*sz), randVec(r, sz*sz), make([]float32, sz*sz)
					b.ResetTimer()
					for range b.N {
						if impl == "fp32" {
							Sgemm(false, false, sz, sz, sz, 1, x, sz, y, sz, 0, c, sz)
						} else {
							SgemmBF16(false, false, sz, sz, sz, 1, x, sz, y, sz, 0, c, sz)
						}
					}
					b.ReportMetric(2*float64(sz)*float64(sz)*float64(sz)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
				})
			}
		}
	}
}
