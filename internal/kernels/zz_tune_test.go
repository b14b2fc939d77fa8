package kernels

import (
	"math/rand"
	"os"
	"strconv"
	"strings"
	"testing"
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

func threadCPU() float64 {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts)
	return float64(ts.Sec) + float64(ts.Nsec)*1e-9
}

// TestTune (KESTREL_TUNE=m,k,n,layout,threads,reps) prints the GEMM rate next to the peak measured just before.
func TestTune(t *testing.T) {
	spec := os.Getenv("KESTREL_TUNE")
	if spec == "" {
		t.Skip()
	}
	f := strings.Split(spec, ",")
	m, _ := strconv.Atoi(f[0])
	k, _ := strconv.Atoi(f[1])
	n, _ := strconv.Atoi(f[2])
	ly := f[3]
	threads, _ := strconv.Atoi(f[4])
	reps, _ := strconv.Atoi(f[5])
	SetThreads(threads)
	if v, err := strconv.Atoi(os.Getenv("KESTREL_KC")); err == nil {
		kern.kc = v
	}
	if v, err := strconv.Atoi(os.Getenv("KESTREL_MC")); err == nil {
		kern.mc = v
	}
	r := rand.New(rand.NewSource(1))
	a, b, c := randVec(r, m*k), randVec(r, k*n), make([]float32, m*n)
	tA, tB := ly == "TN", ly == "NT"
	lda, ldb := k, n
	if tA {
		lda = m
	}
	if tB {
		ldb = k
	}
	Sgemm(tA, tB, m, n, k, 1, a, lda, b, ldb, 0, c, n)
	runtime.LockOSThread()
	loop, per := fmaPeakLoop()
	for i := 0; i < reps; i++ {
		c0 := threadCPU()
		for j := 0; j < 2000; j++ {
			loop(1 << 10)
		}
		pk := 2000 * (1 << 10) * float64(per) / (threadCPU() - c0) / 1e9
		st := time.Now()
		c0 = threadCPU()
		it := 0
		for time.Since(st) < 300*time.Millisecond {
			Sgemm(tA, tB, m, n, k, 1, a, lda, b, ldb, 0, c, n)
			it++
		}
		g := 2 * float64(m*n*k) * float64(it) / (threadCPU() - c0) / 1e9
		t.Logf("%s %s t%d: gemm %.1f peak %.1f ratio %.2f", Impl(), ly, threads, g, pk, g/pk)
	}
}
