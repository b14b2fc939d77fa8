package train

import (
	"fmt"
	"math"
	"os"

	"github.com/kestrel-lm/kestrel/internal/batchsched"
	"github.com/kestrel-lm/kestrel/internal/model"
	"github.com/kestrel-lm/kestrel/internal/optim"
	"github.com/kestrel-lm/kestrel/internal/sysmem"
)

// SkipMemoryCheckEnv names the environment variable that turns the
// start-up memory check off when set to 1 (for a machine whose available
// memory kestrel misreads, or to overcommit on purpose with swap).
const SkipMemoryCheckEnv = "KESTREL_SKIP_MEMORY_CHECK"

// Memory is the estimated memory of a training run, in bytes, by what
// holds it. Params to Activations live for the whole run; Checkpoint and
// EMAEval are transient buffers, counted whole because the garbage
// collector may hold them together (measured on a 17M-parameter run: peak
// RSS within a few % of Total).
type Memory struct {
	Params      int // the weights, float32
	Grads       int // their gradients
	Optimizer   int // AdamW's m and v and its update scratch, 3 × Params; 5 × up to 16 M parameters (the second m and v of the double-buffered step, optim.StateBuffers)
	EMA         int // the EMA weights (0 with optim.ema_beta = 0)
	Activations int // the model's activation arena for Sequences sequences, and the RoPE tables
	Checkpoint  int // transient: weights, m, v and EMA weights encoded while a checkpoint is written, 4 × Params
	EMAEval     int // transient: the weights kept aside while the EMA weights are evaluated (0 without EMA)
	Runtime     int // the Go runtime, kestrel's code and small buffers (a constant)
	// Sequences is the largest batch one pass runs: the micro-batch, or
	// the probe batch (train.probe_sequences) when that is larger.
	Sequences int
}

// runtimeBytes is Memory.Runtime: the resident size of a kestrel process
// that has not allocated its model yet, rounded up.
const runtimeBytes = 96 << 20

// Total is the sum of the parts, saturating at math.MaxInt.
func (m Memory) Total() int {
	t := 0
	for _, x := range []int{m.Params, m.Grads, m.Optimizer, m.EMA, m.Activations, m.Checkpoint, m.EMAEval, m.Runtime} {
		if t > math.MaxInt-x {
			return math.MaxInt
		}
		t += x
	}
	return t
}

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
// whether EMA weights are kept (optim.ema_beta > 0). The parameter count
// and the activation arena come from the model's own layout
// (model.Config.NumParams, ActivationBytes). Not counted: the data (a
// byte-level file is read whole, a dataset is memory-mapped), the reading
// of a checkpoint on resume, and the garbage collector's headroom beyond
// the transient buffers.
func EstimateMemory(mc model.Config, tc Config, ema bool) (Memory, error) {
	n, err := mc.NumParams()
	if err != nil {
		return Memory{}, err
	}
	mb, err := microBatch(tc)
	if err != nil {
		return Memory{}, err
	}
	seqs := max(mb, tc.ProbeSequences)
	act, err := mc.ActivationBytes(seqs)
	if err != nil {
		return Memory{}, err
	}
	p := 4 * n // NumParams < 2^50 (model.Validate's bounds): no overflow
	m := Memory{Params: p, Grads: p, Optimizer: optim.StateBuffers(n) * p, Activations: act, Checkpoint: 4 * p, Runtime: runtimeBytes, Sequences: seqs}
	if ema {
		m.EMA, m.EMAEval = p, p
	}
	return m, nil
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
		"activations for %d sequences of %d tokens %s, checkpoint and evaluation buffers %s, runtime %s) but %s is available (%s); "+
		"reduce model.d_model, model.n_layers, model.mlp_hidden or model.vocab (parameters, gradients, optimizer), "+
		"train.micro_batch (or train.batch_size) and model.seq_len (activations), or set optim.ema_beta = 0; "+
		"%s=1 skips this check",
		gb(est.Total()), gb(est.Params), gb(est.Grads), gb(est.Optimizer), gb(est.EMA),
		est.Sequences, o.Model.SeqLen, gb(est.Activations), gb(est.Checkpoint+est.EMAEval), gb(est.Runtime), gb(avail), source, SkipMemoryCheckEnv)
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
