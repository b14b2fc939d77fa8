package kernels

import (
	"sync/atomic"
	"time"
)

// GemmProfile is where the GEMMs spent their threads' time while profiling
// was on (SetGemmProfile), summed over threads: what `kestrel bench step
// --ops` splits each GEMM op into.
type GemmProfile struct {
	// Pack is the time spent copying op(A) and op(B) into packed panels
	// (PackedB.Pack included).
	Pack time.Duration
	// Kernel is the time in the macro-kernel: the micro-kernel calls over
	// C's tiles, ragged edges included.
	Kernel time.Duration
	// Total is each call's wall time times the threads it used (for
	// SgemmPair side by side: the pair's wall time times two).
	Total time.Duration
}

// Other is Total − Pack − Kernel: threads waiting at the end of a phase
// for the others (and, in SgemmPair, for the other product), and the
// calls' own setup.
func (p GemmProfile) Other() time.Duration { return p.Total - p.Pack - p.Kernel }

// Sub returns p − q, field by field (the profile of what ran between two
// readings).
func (p GemmProfile) Sub(q GemmProfile) GemmProfile {
	return GemmProfile{Pack: p.Pack - q.Pack, Kernel: p.Kernel - q.Kernel, Total: p.Total - q.Total}
}

// Add returns p + q, field by field (two profiles taken together).
func (p GemmProfile) Add(q GemmProfile) GemmProfile {
	return GemmProfile{Pack: p.Pack + q.Pack, Kernel: p.Kernel + q.Kernel, Total: p.Total + q.Total}
}

// gprof holds the running sums, in nanoseconds of thread time.
var gprof struct {
	on                  atomic.Bool
	pack, kernel, total atomic.Int64
}

// SetGemmProfile turns the GEMM profile on or off and returns the previous
// setting. While it is on, each GEMM reads the clock around its packing and
// macro-kernel work items (tens of nanoseconds per item); while it is off,
// one atomic load per item. The sums are global: read them while no other
// goroutine runs GEMMs, or its time is mixed in.
func SetGemmProfile(on bool) (prev bool) { return gprof.on.Swap(on) }

// ReadGemmProfile returns the sums so far (they only grow; subtract two
// readings to profile what ran between them).
func ReadGemmProfile() GemmProfile {
	return GemmProfile{
		Pack:   time.Duration(gprof.pack.Load()),
		Kernel: time.Duration(gprof.kernel.Load()),
		Total:  time.Duration(gprof.total.Load()),
	}
}

// profStart is the start of a profiled section: now while profiling is on,
// else the zero Time (which profAdd ignores).
func profStart() time.Time {
	if gprof.on.Load() {
		return time.Now()
	}
	return time.Time{}
}

// profAdd adds the time since t0 (from profStart), times threads, to sum.
func profAdd(sum *atomic.Int64, t0 time.Time, threads int) {
	if !t0.IsZero() {
		sum.Add(int64(time.Since(t0)) * int64(threads))
	}
}
