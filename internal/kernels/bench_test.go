package kernels

import (
	"fmt"
	"math/rand"
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
