package runlog

// StepVitals are the per-step vitals of the process and of the step's
// shape (internal/stepvitals: memory.go, tails.go): memory, the step-time
// tails over a window and the fractions of the step, the lm_head weight
// norm and the optimizer state's finiteness. A zero (or nil) field was not
// measured and is left out of the line.
type StepVitals struct {
	RSSBytes    int64 // resident set size of the process after the step (/proc/self/statm)
	RSSFile     int64 // its file-backed and shared part (statm's shared field); written with RSSBytes
	GoHeapBytes int64 // the Go heap the last garbage collection marked live (runtime/metrics; 0 before the first)
	// GoMapped is the memory the Go runtime holds from the OS and has not
	// returned (runtime/metrics /memory/classes/total:bytes less
	// /memory/classes/heap/released:bytes): the heap grows towards its GC
	// goal inside it without a leak.
	GoMapped int64

	StepTimeP50, StepTimeP95 float64 // step_time percentiles over the recent steps

	// The fractions of step_time in forward, backward, optimizer and what
	// no phase timed (other_frac); written when FracMeasured. CommFrac is
	// the data-parallel all-reduce wait (allreduce_time / step_time), nil
	// in a single process.
	ForwardFrac, BackwardFrac, OptimizerFrac, OtherFrac float64
	FracMeasured                                        bool
	CommFrac                                            *float64

	LMHeadNorm float64 // L2 norm of the output projection's weight (the embedding when tied)
	// OptStateFinite is 1 when every optimizer moment is finite, 0 when one
	// is not; nil = not checked.
	OptStateFinite *bool
}

func (v *StepVitals) fields(w fieldVisitor) {
	if v.RSSBytes > 0 {
		w.int("rss_bytes", v.RSSBytes)
		w.int("rss_file_bytes", v.RSSFile)
	}
	if v.GoHeapBytes > 0 {
		w.int("go_heap_bytes", v.GoHeapBytes)
	}
	if v.GoMapped > 0 {
		w.int("go_mapped_bytes", v.GoMapped)
	}
	if v.StepTimeP50 > 0 {
		w.float("step_time_p50", v.StepTimeP50)
		w.float("step_time_p95", v.StepTimeP95)
	}
	if v.FracMeasured {
		w.float("forward_frac", v.ForwardFrac)
		w.float("backward_frac", v.BackwardFrac)
		w.float("optimizer_frac", v.OptimizerFrac)
		w.float("other_frac", v.OtherFrac)
	}
	if v.CommFrac != nil {
		w.float("comm_frac", *v.CommFrac)
	}
	if v.LMHeadNorm > 0 {
		w.float("lm_head_norm", v.LMHeadNorm)
	}
	if v.OptStateFinite != nil {
		w.bool("opt_state_finite", *v.OptStateFinite)
	}
}

// ok is checkpoint_ok: 1 when the checkpoint verified after its write.
func (c *Checkpoint) ok() int64 {
	if c.Failed != "" {
		return 0
	}
	return 1
}
