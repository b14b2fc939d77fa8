package kernels

import (
	"runtime"
	"sync"
	"time"
)

// PeakGFLOPS measures the floating-point peak of this machine: threads
// goroutines (each on its own OS thread) run a loop of independent vector
// FMAs of the widest supported width for about d, all starting together
// after a warm-up, and the summed rate is returned in GFLOP/s (one FMA lane
// = 2 FLOP). Without vector FMA support it measures a scalar Go loop
// instead. One probe reads low when other work shares the cores; package
// internal/peak repeats it, keeps the maximum and caches it per machine.
func PeakGFLOPS(threads int, d time.Duration) float64 {
	flops, secs := PeakFLOPs(threads, d)
	var total float64
	for t := range flops {
		total += flops[t] / secs[t]
	}
	return total / 1e9
}

// PeakFLOPs runs the probe of PeakGFLOPS and returns, per thread, the
// floating-point operations done and the wall seconds taken, so callers can
// also relate them to CPU time.
func PeakFLOPs(threads int, d time.Duration) (flops, secs []float64) {
	loop, perIter := fmaPeakLoop()
	if loop == nil {
		loop, perIter = scalarPeakLoop, scalarPeakFlops
	}
	return peakFLOPs(loop, perIter, threads, d)
}

// PeakGFLOPSBF16 is PeakGFLOPS for bf16: a loop of independent VDPBF16PS
// (each 16 lanes × 2 products, 64 FLOP), the peak a bf16 GEMM's rate is
// relative to. ok is false, and nothing is measured, on a CPU without
// AVX512_BF16.
func PeakGFLOPSBF16(threads int, d time.Duration) (gflops float64, ok bool) {
	flops, secs, ok := PeakFLOPsBF16(threads, d)
	for t := range flops {
		gflops += flops[t] / secs[t] / 1e9
	}
	return gflops, ok
}

// PeakFLOPsBF16 is PeakFLOPs for the bf16 probe of PeakGFLOPSBF16 (ok
// false without AVX512_BF16).
func PeakFLOPsBF16(threads int, d time.Duration) (flops, secs []float64, ok bool) {
	loop, perIter := bf16PeakLoop()
	if loop == nil {
		return nil, nil, false
	}
	flops, secs = peakFLOPs(loop, perIter, threads, d)
	return flops, secs, true
}

// peakFLOPs runs loop (perIter FLOPs an iteration) on threads locked
// threads for about d, started together, and returns each one's FLOPs and
// seconds.
func peakFLOPs(loop func(int), perIter, threads int, d time.Duration) (flops, secs []float64) {
	if threads < 1 {
		threads = 1
	}
	const iters = 1 << 14
	var wg, ready sync.WaitGroup
	flops = make([]float64, threads)
	secs = make([]float64, threads)
	ready.Add(threads)
	for t := 0; t < threads; t++ {
		wg.Add(1)
		go func(t int) {
			defer wg.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			loop(iters) // warm up the vector unit
			// Start timing together: a thread timed while the others are
			// still starting (or already done) runs alone and reads a
			// rate the threads do not reach side by side.
			ready.Done()
			ready.Wait()
			start := time.Now()
			n := 0
			for time.Since(start) < d {
				loop(iters)
				n++
			}
			secs[t] = time.Since(start).Seconds()
			flops[t] = float64(n) * iters * float64(perIter)
		}(t)
	}
	wg.Wait()
	return flops, secs
}

var peakSink float32

const scalarPeakFlops = 8 * 2

// scalarPeakLoop runs n iterations of 8 independent scalar multiply-adds.
func scalarPeakLoop(n int) {
	var s0, s1, s2, s3, s4, s5, s6, s7 float32
	x, y := peakSink, peakSink+1
	for i := 0; i < n; i++ {
		s0 = s0*x + y
		s1 = s1*x + y
		s2 = s2*x + y
		s3 = s3*x + y
		s4 = s4*x + y
		s5 = s5*x + y
		s6 = s6*x + y
		s7 = s7*x + y
	}
	peakSink += s0 + s1 + s2 + s3 + s4 + s5 + s6 + s7
}
