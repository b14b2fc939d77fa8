package kernels

import (
	"fmt"
	"math/rand"
	"sync"
	"testing"
	"time"
)

// BenchmarkSgemm reports GFLOP/s for the shapes and layouts on 1 and
// 2 threads with the selected implementation.
func BenchmarkSgemm(b *testing.B) {
	defer SetThreads(Threads())
	r := rand.New(rand.NewSource(1))
	for _, s := range [][3]int{{4096, 512, 512}, {4096, 512, 2048}, {4096, 2048, 512}, {4096, 512, 8192}} {
		m, k, n := s[0], s[1], s[2]
		a, bm, c := randVec(r, m*k), randVec(r, k*n), make([]float32, m*n)
		for _, ly := range []string{"NN", "NT", "TN"} {
			tA, tB := ly == "TN", ly == "NT"
			lda, ldb := k, n
			if tA {
				lda = m
			}
			if tB {
				ldb = k
			}
			for _, threads := range []int{1, 2} {
				b.Run(fmt.Sprintf("%s/m%d_k%d_n%d/t%d", ly, m, k, n, threads), func(b *testing.B) {
					SetThreads(threads)
					for i := 0; i < b.N; i++ {
						Sgemm(tA, tB, m, n, k, 1, a, lda, bm, ldb, 0, c, n)
					}
					b.ReportMetric(2*float64(m)*float64(n)*float64(k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
				})
			}
		}
	}
}

func BenchmarkPeak(b *testing.B) {
	for _, threads := range []int{1, 2} {
		b.Run(fmt.Sprintf("t%d", threads), func(b *testing.B) {
			var g float64
			for i := 0; i < b.N; i++ {
				g = PeakGFLOPS(threads, 200*time.Millisecond)
			}
			b.ReportMetric(g, "GFLOP/s")
		})
	}
}

// smallLinears are the linear layers of the nanoGPT-sized model
// (configs/shakespeare-char.toml: d 128, SwiGLU hidden 384, vocab 256) at
// one micro-batch of 6×64 rows: name, in, out.
var smallLinears = []struct {
	name    string
	in, out int
}{{"qkv", 128, 384}, {"o", 128, 128}, {"gu", 128, 768}, {"down", 384, 128}, {"lm", 128, 256}}

// BenchmarkSgemmSmall reports GFLOP/s for the products of the small
// model's linear layers at M = 384 rows: the forward y = x·Wᵀ (NT), the
// input gradient dx = dy·W (NN), the weight gradient dW += dyᵀ·x (TN) and
// the backward pair (SgemmPair of the last two), on 1 and 2 threads.
func BenchmarkSgemmSmall(b *testing.B) {
	defer SetThreads(Threads())
	const rows = 384
	r := rand.New(rand.NewSource(1))
	for _, l := range smallLinears {
		x, w, y := randVec(r, rows*l.in), randVec(r, l.out*l.in), randVec(r, rows*l.out)
		dx, dw := make([]float32, rows*l.in), make([]float32, l.out*l.in)
		fwd := GemmArgs{TransB: true, M: rows, N: l.out, K: l.in, Alpha: 1, A: x, Lda: l.in, B: w, Ldb: l.in, C: y, Ldc: l.out}
		dX := GemmArgs{M: rows, N: l.in, K: l.out, Alpha: 1, A: y, Lda: l.out, B: w, Ldb: l.in, C: dx, Ldc: l.in}
		dW := GemmArgs{TransA: true, M: l.out, N: l.in, K: rows, Alpha: 1, A: y, Lda: l.out, B: x, Ldb: l.in, Beta: 1, C: dw, Ldc: l.in}
		flops := 2 * float64(rows) * float64(l.in) * float64(l.out)
		cases := []struct {
			name  string
			f     func()
			flops float64
		}{{"fwd", fwd.Sgemm, flops}, {"dX", dX.Sgemm, flops}, {"dW", dW.Sgemm, flops}, {"bwd", func() { SgemmPair(dX, dW) }, 2 * flops}}
		for _, c := range cases {
			for _, threads := range []int{1, 2} {
				b.Run(fmt.Sprintf("%s/%s/t%d", l.name, c.name, threads), func(b *testing.B) {
					SetThreads(threads)
					for i := 0; i < b.N; i++ {
						c.f()
					}
					b.ReportMetric(c.flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
				})
			}
		}
	}
}

// benchPeaks caches the FMA peak of 1 and 2 threads (the best of three
// probes) for the benchmarks that report a fraction of it.
var benchPeaks struct {
	sync.Mutex
	g [3]float64
}

func benchPeak1(threads int) float64 {
	benchPeaks.Lock()
	defer benchPeaks.Unlock()
	if benchPeaks.g[threads] == 0 {
		for range 3 {
			benchPeaks.g[threads] = max(benchPeaks.g[threads], PeakGFLOPS(threads, 100*time.Millisecond))
		}
	}
	return benchPeaks.g[threads]
}

// BenchmarkSgemmSmallShapes times each product of the small model
// (smallLinears at one micro-batch of M = 384 rows) as the training step
// runs it — the forward y = x·Wᵀ (NT), the input gradient dx = dy·W (NN),
// the weight gradient dW = dyᵀ·x (TN) with beta 0 (first micro-batch) and
// 1 (later ones) — on 1 thread, on 2, and inline on a 2-thread pool that
// is busy (as inside a replica that runs its products while the other
// replica holds the pool; the GEMM's schedule is chosen for 2 threads but
// runs on the caller alone). It reports GFLOP/s,
// the fraction of the same thread count's FMA peak and the share of the
// time spent packing (the GEMM profile).
func BenchmarkSgemmSmallShapes(b *testing.B) {
	defer SetThreads(Threads())
	defer SetGemmProfile(SetGemmProfile(false))
	const rows = 384
	r := rand.New(rand.NewSource(1))
	for _, l := range smallLinears {
		x, w, y := randVec(r, rows*l.in), randVec(r, l.out*l.in), randVec(r, rows*l.out)
		dx, dw := make([]float32, rows*l.in), make([]float32, l.out*l.in)
		cases := []struct {
			name string
			g    GemmArgs
		}{
			{"fwd", GemmArgs{TransB: true, M: rows, N: l.out, K: l.in, Alpha: 1, A: x, Lda: l.in, B: w, Ldb: l.in, C: y, Ldc: l.out}},
			{"dX", GemmArgs{M: rows, N: l.in, K: l.out, Alpha: 1, A: y, Lda: l.out, B: w, Ldb: l.in, C: dx, Ldc: l.in}},
			{"dW0", GemmArgs{TransA: true, M: l.out, N: l.in, K: rows, Alpha: 1, A: y, Lda: l.out, B: x, Ldb: l.in, C: dw, Ldc: l.in}},
			{"dW1", GemmArgs{TransA: true, M: l.out, N: l.in, K: rows, Alpha: 1, A: y, Lda: l.out, B: x, Ldb: l.in, Beta: 1, C: dw, Ldc: l.in}},
		}
		flops := 2 * float64(rows) * float64(l.in) * float64(l.out)
		for _, c := range cases {
			for _, mode := range []string{"t1", "t2", "inline"} {
				b.Run(fmt.Sprintf("%s/%s/%s", l.name, c.name, mode), func(b *testing.B) {
					threads := 1
					if mode != "t1" {
						threads = 2
					}
					SetThreads(threads)
					peak := benchPeak1(threads)
					if mode == "inline" {
						threads = 1
						peak = benchPeak1(1)
						p := currentPool()
						p.mu.Lock() // busy: every GEMM runs inline
						defer p.mu.Unlock()
					}
					SetGemmProfile(true)
					p0 := ReadGemmProfile()
					b.ResetTimer()
					for i := 0; i < b.N; i++ {
						c.g.Sgemm()
					}
					b.StopTimer()
					p := ReadGemmProfile().Sub(p0)
					SetGemmProfile(false)
					g := flops * float64(b.N) / b.Elapsed().Seconds() / 1e9
					b.ReportMetric(g, "GFLOP/s")
					b.ReportMetric(g/peak, "of_peak")
					b.ReportMetric(float64(p.Pack)/float64(threads)/float64(b.Elapsed()), "pack")
				})
			}
		}
	}
}
