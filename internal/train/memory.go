package train

import (
	"fmt"
	"math"
	"os"

	"github.com/kestrel-lm/kestrel/internal/batchsched"
	"github.com/kestrel-lm/kestrel/internal/memplan"
	"github.com/kestrel-lm/kestrel/internal/model"
	"github.com/kestrel-lm/kestrel/internal/sysmem"
)

// SkipMemoryCheckEnv names the environment variable that turns the
// start-up memory check off when set to 1 (for a machine whose available
// memory kestrel misreads, or to overcommit on purpose with swap).
const SkipMemoryCheckEnv = "KESTREL_SKIP_MEMORY_CHECK"

// Memory is the estimated memory of a training run (memplan.Memory).
type Memory = memplan.Memory

// microBatch is the number of sequences per forward/backward: the
// largest global batch of the schedule, or train.micro_batch when smaller.
func microBatch(tc Config) (int, error) {
	bs, err := batchsched.FromConfig("train.batch_schedule", tc.BatchSchedule, tc.BatchSize)
	if err != nil {
		return 0, err
	}
	maxB := bs.Max()
	mb := tc.MicroBatch
	if mb <= 0 || mb > maxB {
		mb = maxB
	}
	return mb, nil
}

// EstimateMemory estimates, without allocating any of it, the memory a
// training run of model mc with the [train] section tc holds; ema says
// whether EMA weights are kept (optim.ema_beta > 0): memplan.Estimate
// for its micro-batch, probe sequences and parallel_micro_batches.
func EstimateMemory(mc model.Config, tc Config, ema bool) (Memory, error) {
	mb, err := microBatch(tc)
	if err != nil {
		return Memory{}, err
	}
	return memplan.Estimate(mc, mb, tc.ProbeSequences, tc.ParallelMicroBatches, ema)
}

// availableMemory is sysmem.Available; tests replace it.
var availableMemory = func() (int, string, bool) { return sysmem.Available("/") }

// checkMemory refuses a run whose estimated memory exceeds the available
// memory, before anything is allocated or written, naming the estimate,
// what is available and the settings that reduce it. It does nothing when
// SkipMemoryCheckEnv is 1, and logs instead of refusing when the available
// memory cannot be read.
func checkMemory(o Options) error {
	est, err := preflightEstimate(o)
	if err != nil {
		return err
	}
	if os.Getenv(SkipMemoryCheckEnv) == "1" {
		return nil
	}
	avail, source, ok := availableMemory()
	if !ok {
		if o.Logger != nil {
			o.Logger.Info("memory check skipped: available memory unknown (no /proc/meminfo)", "estimate", gb(est.Total()))
		}
		return nil
	}
	if est.Total() <= avail {
		return nil
	}
	return fmt.Errorf("train: not enough memory: this run needs about %s (parameters %s, gradients %s, AdamW m, v and update %s, EMA %s, "+
		"activations for %d sequences of %d tokens (replicas: %d) %s, checkpoint and evaluation buffers %s, runtime %s) but %s is available (%s); "+
		"reduce model.d_model, model.n_layers, model.mlp_hidden or model.vocab (parameters, gradients, optimizer), "+
		"train.micro_batch (or train.batch_size), train.parallel_micro_batches and model.seq_len (activations), or set optim.ema_beta = 0; "+
		"%s=1 skips this check",
		gb(est.Total()), gb(est.Params), gb(est.Grads), gb(est.Optimizer), gb(est.EMA),
		est.Sequences, o.Model.SeqLen, est.Replicas, gb(est.Activations), gb(est.Checkpoint+est.EMAEval), gb(est.Runtime), gb(avail), source, SkipMemoryCheckEnv)
}

// gb renders bytes in decimal units.
func gb(b int) string {
	switch {
	case b == math.MaxInt:
		return "more than 9 EB"
	case b >= 1e9:
		return fmt.Sprintf("%.1f GB", float64(b)/1e9)
	default:
		return fmt.Sprintf("%.1f MB", float64(b)/1e6)
	}
}
