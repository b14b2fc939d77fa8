package kernels

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestParallelForCoversRangeOnce(t *testing.T) {
	defer SetThreads(Threads())
	for _, threads := range []int{1, 2, 3} {
		SetThreads(threads)
		if got := Threads(); got != threads {
			t.Fatalf("Threads() = %d after SetThreads(%d)", got, threads)
		}
		for _, tc := range []struct{ n, grain int }{{0, 1}, {1, 1}, {7, 1}, {100, 3}, {1000, 64}, {5, 100}, {1 << 16, 1}} {
			hits := make([]int32, tc.n)
			ParallelFor(tc.n, tc.grain, func(s, e int) {
				if e-s < 1 {
					t.Errorf("empty chunk [%d,%d)", s, e)
				}
				for i := s; i < e; i++ {
					atomic.AddInt32(&hits[i], 1)
				}
			})
			for i, h := range hits {
				if h != 1 {
					t.Fatalf("threads %d n %d grain %d: index %d visited %d times", threads, tc.n, tc.grain, i, h)
				}
			}
		}
	}
}

func TestParallelForNestedAndConcurrent(t *testing.T) {
	defer SetThreads(Threads())
	SetThreads(2)
	var total atomic.Int64
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := 0; r < 50; r++ {
				ParallelFor(10, 1, func(s, e int) {
					ParallelFor(10, 1, func(s2, e2 int) {
						total.Add(int64((e - s) * (e2 - s2)))
					})
				})
			}
		}()
	}
	// Resize while others run: must neither deadlock nor lose work.
	for i := 0; i < 10; i++ {
		SetThreads(1 + i%3)
	}
	wg.Wait()
	if got, want := total.Load(), int64(4*50*100); got != want {
		t.Fatalf("total %d, want %d", got, want)
	}
}

type sumTask struct{ out []float32 }

func (s *sumTask) Run(a, b int) {
	for i := a; i < b; i++ {
		s.out[i]++
	}
}

func TestParallelForTaskNoAllocs(t *testing.T) {
	defer SetThreads(Threads())
	SetThreads(2)
	task := &sumTask{out: make([]float32, 4096)}
	fn := task.Run // created once: passing it allocates nothing
	allocs := testing.AllocsPerRun(100, func() {
		ParallelForTask(len(task.out), 16, task)
		ParallelFor(len(task.out), 16, fn)
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per call, want 0", allocs)
	}
	for i, v := range task.out {
		if v != 202 {
			t.Fatalf("out[%d] = %v, want 202", i, v)
		}
	}
}

// TestParallelForManyTinyJobs runs back-to-back jobs so that workers often
// wake after their job is over; each must still run every index exactly once.
func TestParallelForManyTinyJobs(t *testing.T) {
	defer SetThreads(Threads())
	SetThreads(3)
	out := make([]int32, 8)
	fn := func(s, e int) {
		for i := s; i < e; i++ {
			atomic.AddInt32(&out[i], 1)
		}
	}
	const jobs = 20000
	for j := 0; j < jobs; j++ {
		ParallelFor(len(out), 1, fn)
	}
	for i, v := range out {
		if v != jobs {
			t.Fatalf("out[%d] = %d, want %d", i, v, jobs)
		}
	}
}

// busyTask keeps its core busy for d per item.
type busyTask struct{ d time.Duration }

func (t *busyTask) Run(s, e int) {
	for i := s; i < e; i++ {
		for t0 := time.Now(); time.Since(t0) < t.d; {
		}
	}
}

// BenchmarkPoolLatency times jobs of two equal chunks on two threads, with
// some serial work of the caller's between jobs (as between a model's
// ops), and reports how much longer than one chunk each job took: the
// second thread's lateness. Before the pool's participants watched for
// work (spinFor), a blocked worker's virtual CPU halted, and on the 2-core
// VM every job then took ~100 µs more (the worker joined late, so the
// caller ran both 100 µs chunks itself).
func BenchmarkPoolLatency(b *testing.B) {
	defer SetThreads(Threads())
	SetThreads(2)
	for _, chunk := range []time.Duration{20 * time.Microsecond, 100 * time.Microsecond, time.Millisecond} {
		b.Run(fmt.Sprintf("chunk%v", chunk), func(b *testing.B) {
			job, gap := busyTask{d: chunk}, busyTask{d: 20 * time.Microsecond}
			var late time.Duration
			for i := 0; i < b.N; i++ {
				t0 := time.Now()
				ParallelForTask(2, 1, &job)
				late += time.Since(t0) - chunk
				gap.Run(0, 1)
			}
			b.ReportMetric(float64(late.Microseconds())/float64(b.N), "µs-late/job")
		})
	}
}
