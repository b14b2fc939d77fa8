package kernels

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"time"
)

// GEMMBenchShapes are the (m, k, n) products BenchGEMM times: the
// projections of a 4096-token batch at widths 512, 2048 and 8192.
var GEMMBenchShapes = [][3]int{{4096, 512, 512}, {4096, 512, 2048}, {4096, 2048, 512}, {4096, 512, 8192}}

// GEMMBenchLayouts are the layouts BenchGEMM times: NN, NT (C = A·Bᵀ, as in
// dX = dY·Wᵀ) and TN (C = Aᵀ·B, as in dW = Xᵀ·dY).
var GEMMBenchLayouts = []string{"NN", "NT", "TN"}

// GEMMBench is one product timed by BenchGEMM. Rates are GFLOP/s: GFLOPS of
// the median call, GFLOPSCPU by CPU time (FLOPs ÷ process CPU seconds ×
// threads, i.e. the rate had each thread kept its core), and the FMA peak
// probed just before the product for the same thread count, by wall clock
// (Peak) and by CPU time (PeakCPU).
type GEMMBench struct {
	DType                            string // "fp32" (Sgemm) or "bf16" (SgemmBF16; Peak is the bf16 peak)
	Impl                             string // Impl() or BF16Impl()
	Layout                           string
	M, K, N, Threads                 int
	GFLOPS, Peak, GFLOPSCPU, PeakCPU float64
}

// PeakBench summarises the FMA peak probes BenchGEMM took for one thread
// count: the medians (GFLOPS wall, GFLOPSCPU by CPU time) and the range of
// the wall rates over Probes probes.
type PeakBench struct {
	DType                       string // "fp32": the FMA probe; "bf16": the VDPBF16PS probe
	Threads                     int
	GFLOPS, GFLOPSCPU, Min, Max float64
	Probes                      int
}

// GEMMBenchOptions configure BenchGEMM.
type GEMMBenchOptions struct {
	Threads  []int         // thread counts, each ≥ 1
	Duration time.Duration // time spent on each product (> 0)
	Shapes   [][3]int      // (m, k, n) products; nil = GEMMBenchShapes
	// DTypes are the arithmetics timed, each product in each in turn
	// (alternating, so they share the machine's load): "fp32" (Sgemm
	// against the FMA peak) and "bf16" (SgemmBF16 against the VDPBF16PS
	// peak; needs AVX512_BF16). nil = fp32 only.
	DTypes []string
	// Product receives each timed product; Peak the summary of the peak
	// probes after the last product of a thread count. Either may be nil.
	Product func(GEMMBench)
	Peak    func(PeakBench)
}

// BenchGEMM times Sgemm on opt.Shapes (default GEMMBenchShapes) in every GEMMBenchLayouts for
// each thread count. Each product runs repeatedly for about opt.Duration
// (at least three calls after a warm-up); just before it the FMA peak
// (PeakFLOPs) is probed for max(Duration/4, 50ms) on the same threads, so
// the two are taken under the same machine load. The thread setting is
// restored on return. It stops with ctx's error when ctx is cancelled.
func BenchGEMM(ctx context.Context, opt GEMMBenchOptions) error {
	if !(opt.Duration > 0) {
		return fmt.Errorf("bench gemm: --seconds must be > 0, got %v", opt.Duration.Seconds())
	}
	if len(opt.Threads) == 0 {
		return fmt.Errorf("bench gemm: no thread counts")
	}
	for _, t := range opt.Threads {
		if t < 1 {
			return fmt.Errorf("bench gemm: --threads: %d is not a thread count >= 1", t)
		}
	}
	shapes := opt.Shapes
	if shapes == nil {
		shapes = GEMMBenchShapes
	}
	dtypes := opt.DTypes
	if len(dtypes) == 0 {
		dtypes = []string{"fp32"}
	}
	for _, d := range dtypes {
		switch d {
		case "fp32":
		case "bf16":
			if ok, missing := BF16Hardware(); !ok {
				return fmt.Errorf("bench gemm: --dtype bf16: this CPU has no %s, so there is no bf16 peak to compare with", missing)
			}
		default:
			return fmt.Errorf("bench gemm: --dtype: %q is not fp32 or bf16", d)
		}
	}
	peakDur := max(opt.Duration/4, 50*time.Millisecond)
	saved := Threads()
	defer SetThreads(saved)
	r := rand.New(rand.NewPCG(1, 2))
	for _, t := range opt.Threads {
		SetThreads(t)
		peaks, cpuPeaks := map[string][]float64{}, map[string][]float64{}
		for _, s := range shapes {
			m, k, n := s[0], s[1], s[2]
			a, b := benchRandVec(r, m*k), benchRandVec(r, k*n)
			c := make([]float32, m*n)
			for _, ly := range GEMMBenchLayouts {
				for _, dt := range dtypes {
					if err := ctx.Err(); err != nil {
						return err
					}
					peak, cpuPeak := benchPeak(dt, t, peakDur)
					peaks[dt], cpuPeaks[dt] = append(peaks[dt], peak), append(cpuPeaks[dt], cpuPeak)
					g, gc := timeGemm(dt == "bf16", ly, m, k, n, t, a, b, c, opt.Duration)
					if opt.Product != nil {
						opt.Product(GEMMBench{DType: dt, Impl: dtypeImpl(dt), Layout: ly, M: m, K: k, N: n, Threads: t,
							GFLOPS: g, Peak: peak, GFLOPSCPU: gc, PeakCPU: cpuPeak})
					}
				}
			}
		}
		for _, dt := range dtypes {
			p, cp := peaks[dt], cpuPeaks[dt]
			sort.Float64s(p)
			sort.Float64s(cp)
			if opt.Peak != nil {
				opt.Peak(PeakBench{DType: dt, Threads: t, GFLOPS: p[len(p)/2], GFLOPSCPU: cp[len(cp)/2],
					Min: p[0], Max: p[len(p)-1], Probes: len(p)})
			}
		}
	}
	return nil
}

// benchPeak probes the peak of dtype ("fp32": FMA, "bf16": VDPBF16PS) on
// threads threads for d and returns it by wall clock and by CPU time.
func benchPeak(dtype string, threads int, d time.Duration) (wall, cpu float64) {
	c0 := processCPUSeconds()
	var flops, secs []float64
	if dtype == "bf16" {
		flops, secs, _ = PeakFLOPsBF16(threads, d)
	} else {
		flops, secs = PeakFLOPs(threads, d)
	}
	cpuSec := processCPUSeconds() - c0
	var total float64
	for i := range flops {
		wall += flops[i] / secs[i] / 1e9
		total += flops[i]
	}
	return wall, total / cpuSec * float64(threads) / 1e9
}

// dtypeImpl names the implementation that runs dtype's products.
func dtypeImpl(dtype string) string {
	if dtype == "bf16" {
		return BF16Impl()
	}
	return Impl()
}

// timeGemm runs one product (SgemmBF16 when bf16, else Sgemm) repeatedly for about dur (at least three calls
// after a warm-up) and returns the GFLOP/s of the median call and the
// CPU-time rate over all calls (FLOPs ÷ process CPU seconds × threads).
func timeGemm(bf16 bool, layout string, m, k, n, threads int, a, b, c []float32, dur time.Duration) (wall, cpu float64) {
	tA, tB := layout == "TN", layout == "NT"
	lda, ldb := k, n
	if tA {
		lda = m
	}
	if tB {
		ldb = k
	}
	gemm := Sgemm
	if bf16 {
		gemm = SgemmBF16
	}
	gemm(tA, tB, m, n, k, 1, a, lda, b, ldb, 0, c, n)
	var times []float64
	flops := 2 * float64(m) * float64(n) * float64(k)
	start, c0 := time.Now(), processCPUSeconds()
	for len(times) < 3 || time.Since(start) < dur {
		t0 := time.Now()
		gemm(tA, tB, m, n, k, 1, a, lda, b, ldb, 0, c, n)
		times = append(times, time.Since(t0).Seconds())
	}
	cpuSec := processCPUSeconds() - c0
	sort.Float64s(times)
	return flops / times[len(times)/2] / 1e9, flops * float64(len(times)) / cpuSec * float64(threads) / 1e9
}

func benchRandVec(r *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = r.Float32()*2 - 1
	}
	return v
}
