package main

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/kestrel-lm/kestrel/internal/kernels"
)

// gemmBenchShapes are the (m, k, n) products of issue 3: the projections of a
// 4096-token batch at widths 512, 2048 and 8192.
var gemmBenchShapes = [][3]int{{4096, 512, 512}, {4096, 512, 2048}, {4096, 2048, 512}, {4096, 512, 8192}}

func newBenchGemmCmd() *cobra.Command {
	var (
		asJSON  bool
		threads string
		seconds float64
	)
	cmd := &cobra.Command{
		Use:   "gemm",
		Short: "SGEMM GFLOP/s per layout, shape and thread count, and the measured FMA peak",
		Long: `Times kernels.Sgemm on the shapes (m,k,n) = (4096,512,512), (4096,512,2048),
(4096,2048,512), (4096,512,8192) in the layouts NN, NT (C = A·Bᵀ, as in
dX = dY·Wᵀ) and TN (C = Aᵀ·B, as in dW = Xᵀ·dY), for each thread count.
Each product runs repeatedly for --seconds; the rate of the median call is
reported. Just before each product the FMA peak (kernels.PeakGFLOPS, an
assembly loop of independent FMAs) is measured for the same thread count, so
pct_peak compares numbers taken under the same machine load.

On a machine shared with other work the wall-clock rates swing with the
load, so each measurement also reports a CPU-time rate: FLOPs ÷ process CPU
seconds × threads, i.e. the rate had each thread kept its core (time spent
descheduled, and time a thread waits blocked, do not count). pct_peak_cpu
compares those. With --json it prints one object per line:
  {"op":"gemm","layout":"NN","m":…,"k":…,"n":…,"threads":…,"gflops":…,"pct_peak":…,"gflops_cpu":…,"pct_peak_cpu":…}
  {"op":"peak","threads":…,"gflops":…,"gflops_cpu":…}   (medians of the probes of that thread count)`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ts, err := parseThreadList(threads)
			if err != nil {
				return fmt.Errorf("bench gemm: --threads: %w", err)
			}
			if !(seconds > 0) {
				return fmt.Errorf("bench gemm: --seconds must be > 0, got %v", seconds)
			}
			dur := time.Duration(seconds * float64(time.Second))
			peakDur := max(dur/4, 50*time.Millisecond)
			saved := kernels.Threads()
			defer kernels.SetThreads(saved)
			w := cmd.OutOrStdout()
			emit := func(v map[string]any) {
				data, _ := json.Marshal(v)
				fmt.Fprintln(w, string(data))
			}
			if !asJSON {
				fmt.Fprintf(w, "SGEMM, implementation %s (CPU features %s)\n", kernels.Impl(), kernels.FeatureString())
				fmt.Fprintf(w, "%-6s %5s %5s %5s %7s %9s %9s %7s | %9s %9s %7s\n", "layout", "m", "k", "n", "threads",
					"GFLOP/s", "peak", "%peak", "cpu-rate", "cpu-peak", "%peak")
			}
			r := rand.New(rand.NewPCG(1, 2))
			for _, t := range ts {
				kernels.SetThreads(t)
				var peaks, cpuPeaks []float64
				for _, s := range gemmBenchShapes {
					m, k, n := s[0], s[1], s[2]
					a, b := benchRandVec(r, m*k), benchRandVec(r, k*n)
					c := make([]float32, m*n)
					for _, ly := range []string{"NN", "NT", "TN"} {
						if err := cmd.Context().Err(); err != nil {
							return err
						}
						c0 := processCPUSeconds()
						flops, secs := kernels.PeakFLOPs(t, peakDur)
						cpu := processCPUSeconds() - c0
						var peak, total float64
						for i := range flops {
							peak += flops[i] / secs[i] / 1e9
							total += flops[i]
						}
						cpuPeak := total / cpu * float64(t) / 1e9
						peaks, cpuPeaks = append(peaks, peak), append(cpuPeaks, cpuPeak)
						g, gc := timeGemm(ly, m, k, n, t, a, b, c, dur)
						if asJSON {
							emit(map[string]any{"op": "gemm", "layout": ly, "m": m, "k": k, "n": n, "threads": t,
								"gflops": round1(g), "pct_peak": round1(100 * g / peak),
								"gflops_cpu": round1(gc), "pct_peak_cpu": round1(100 * gc / cpuPeak), "impl": kernels.Impl()})
						} else {
							fmt.Fprintf(w, "%-6s %5d %5d %5d %7d %9.1f %9.1f %6.1f%% | %9.1f %9.1f %6.1f%%\n",
								ly, m, k, n, t, g, peak, 100*g/peak, gc, cpuPeak, 100*gc/cpuPeak)
						}
					}
				}
				sort.Float64s(peaks)
				sort.Float64s(cpuPeaks)
				pk, cpk := peaks[len(peaks)/2], cpuPeaks[len(cpuPeaks)/2]
				if asJSON {
					emit(map[string]any{"op": "peak", "threads": t, "gflops": round1(pk), "gflops_cpu": round1(cpk), "impl": kernels.Impl()})
				} else {
					fmt.Fprintf(w, "FMA peak, %d thread(s): %.1f GFLOP/s wall (median of %d probes, min %.1f, max %.1f), %.1f by CPU time\n",
						t, pk, len(peaks), peaks[0], peaks[len(peaks)-1], cpk)
				}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object per measurement")
	cmd.Flags().StringVar(&threads, "threads", "1,2", "comma-separated thread counts")
	cmd.Flags().Float64Var(&seconds, "seconds", 1, "time spent on each product")
	return cmd
}

// timeGemm runs one product repeatedly for about dur (at least three calls
// after a warm-up) and returns the GFLOP/s of the median call and the
// CPU-time rate over all calls (FLOPs ÷ process CPU seconds × threads).
func timeGemm(layout string, m, k, n, threads int, a, b, c []float32, dur time.Duration) (wall, cpu float64) {
	tA, tB := layout == "TN", layout == "NT"
	lda, ldb := k, n
	if tA {
		lda = m
	}
	if tB {
		ldb = k
	}
	kernels.Sgemm(tA, tB, m, n, k, 1, a, lda, b, ldb, 0, c, n)
	var times []float64
	flops := 2 * float64(m) * float64(n) * float64(k)
	start, c0 := time.Now(), processCPUSeconds()
	for len(times) < 3 || time.Since(start) < dur {
		t0 := time.Now()
		kernels.Sgemm(tA, tB, m, n, k, 1, a, lda, b, ldb, 0, c, n)
		times = append(times, time.Since(t0).Seconds())
	}
	cpuSec := processCPUSeconds() - c0
	sort.Float64s(times)
	return flops / times[len(times)/2] / 1e9, flops * float64(len(times)) / cpuSec * float64(threads) / 1e9
}

// processCPUSeconds is the user+system CPU time of this process so far.
func processCPUSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Sec+ru.Stime.Sec) + float64(ru.Utime.Usec+ru.Stime.Usec)*1e-6
}

func benchRandVec(r *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = r.Float32()*2 - 1
	}
	return v
}

// parseThreadList parses "1,2" into thread counts ≥ 1.
func parseThreadList(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		t, err := strconv.Atoi(f)
		if err != nil || t < 1 {
			return nil, fmt.Errorf("%q is not a thread count >= 1", f)
		}
		out = append(out, t)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no thread counts in %q", s)
	}
	return out, nil
}

func round1(x float64) float64 { return math.Round(x*10) / 10 }
