// Package memplan estimates, without allocating any of it, the memory a
// training run holds: the trainer's start-up check refuses a run that does
// not fit, and the run manifest records the estimate beside the measured
// peak (memory_estimate_bytes, rss_bytes).
package memplan

import (
	"math"

	"github.com/kestrel-lm/kestrel/internal/model"
	"github.com/kestrel-lm/kestrel/internal/optim"
)

// Memory is the estimated memory of a training run, in bytes, by what
// holds it. Params to Activations live for the whole run; Checkpoint and
// EMAEval are transient buffers, counted whole because the garbage
// collector may hold them together (measured on a 17M-parameter run: peak
// RSS within a few % of Total).
type Memory struct {
	Params      int // the weights, float32
	Grads       int // their gradients, one buffer per replica
	Optimizer   int // AdamW's m and v and its update scratch, 3 × Params; 5 × up to 16 M parameters (the second m and v of the double-buffered step, optim.StateBuffers)
	EMA         int // the EMA weights (0 with optim.ema_beta = 0)
	Activations int // the model's activation arena for Sequences sequences, each other replica's for a micro-batch, and the RoPE tables
	Checkpoint  int // transient: weights, m, v and EMA weights encoded while a checkpoint is written, 4 × Params
	EMAEval     int // transient: the weights kept aside while the EMA weights are evaluated (0 without EMA)
	Runtime     int // the Go runtime, kestrel's code and small buffers (a constant)
	// Sequences is the largest batch one pass runs: the micro-batch, or
	// the probe batch (train.probe_sequences) when that is larger.
	Sequences int
	// Replicas is the number of model replicas whose passes run side by
	// side (train.parallel_micro_batches; 1 for an MoE model, which has
	// none).
	Replicas int
}

// RuntimeBytes is Memory.Runtime: the resident size of a kestrel process
// that has not allocated its model yet, rounded up.
const RuntimeBytes = 96 << 20

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

// Estimate is the memory of training model mc in passes of microBatch
// sequences (probe sequences in the probe's pass, when more) on replicas
// side by side (train.parallel_micro_batches; below 2, or for an MoE
// model, one), with EMA weights when ema. The parameter count and the
// activation arenas come from the model's own layout
// (model.Config.NumParams, ActivationBytes). Not counted: the data (a
// byte-level file is read whole, a dataset is memory-mapped), the reading
// of a checkpoint on resume, and the garbage collector's headroom beyond
// the transient buffers.
func Estimate(mc model.Config, microBatch, probe, replicas int, ema bool) (Memory, error) {
	n, err := mc.NumParams()
	if err != nil {
		return Memory{}, err
	}
	seqs := max(microBatch, probe)
	act, err := mc.ActivationBytes(seqs)
	if err != nil {
		return Memory{}, err
	}
	if replicas < 2 || mc.MoEEvery > 0 {
		replicas = 1
	}
	p := 4 * n // NumParams < 2^50 (model.Validate's bounds): no overflow
	m := Memory{Params: p, Grads: p, Optimizer: optim.StateBuffers(n) * p, Activations: act, Checkpoint: 4 * p,
		Runtime: RuntimeBytes, Sequences: seqs, Replicas: replicas}
	if replicas > 1 { // each other replica: a gradient buffer and an arena for one micro-batch
		rep, err := mc.ActivationBytes(microBatch)
		if err != nil {
			return Memory{}, err
		}
		m.Grads += (replicas - 1) * p
		if rep > (math.MaxInt-m.Activations)/(replicas-1) {
			rep = (math.MaxInt - m.Activations) / (replicas - 1) // Total saturates
		}
		m.Activations += (replicas - 1) * rep
	}
	if ema {
		m.EMA, m.EMAEval = p, p
	}
	return m, nil
}
