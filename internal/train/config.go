// Package train is the training loop: batches, forward/backward with
// gradient accumulation, the optimizer step with the stability toolkit,
// checkpoints with bit-exact resume, and warm-start surgery.
package train

import (
	"errors"
	"fmt"
	"math"

	"github.com/kestrel-lm/kestrel/internal/kernels/ops"
)

// Config is the [train] section of a run config.
type Config struct {
	Steps          int     `toml:"steps" comment:"number of optimizer steps (the last step of the run; a warm-start in full mode continues the source's count)"`
	BatchSize      int     `toml:"batch_size" comment:"global batch in sequences per step (B0 for sqrt batch LR scaling when batch_schedule is empty)"`
	BatchSchedule  [][]int `toml:"batch_schedule" comment:"global batch schedule as [[start_step, batch], ...]; start_step is a metrics step, numbered from 1 as the \"step\" of metrics.jsonl and the logs (like data.stages[].start_step), so [s, b] takes effect at step s; the first entry starts at step 1 (empty = batch_size throughout; e.g. [[1, 8192], [18501, 7680], [21011, 8192]])"`
	MicroBatch     int     `toml:"micro_batch" comment:"sequences per forward/backward (gradient accumulation when smaller than the global batch; 0 = the global batch)"`
	EvalEvery      int     `toml:"eval_every" comment:"evaluate validation loss (raw and EMA weights) every N steps (0 = only at the end)"`
	EvalBatches    int     `toml:"eval_batches" comment:"validation rows = eval_batches × the first global batch, spread evenly over the validation set (0 = every row; the final evaluation always reads every row)"`
	ProbeSequences int     `toml:"probe_sequences" comment:"validation sequences in the frozen probe batch (probe.json in the run, hash in manifest.json) measured at every evaluation (fixed_probe_loss, logit_entropy_probe, topk_mass_probe) and at every checkpoint (output_kl_to_prev); 0 = no probes"`
	ValFraction    float64 `toml:"val_fraction" comment:"bytes mode: fraction at the end of data.train held out for validation when data.val is empty"`
	LossEMABeta    float64 `toml:"loss_ema_beta" comment:"β of the bias-corrected EMA reported as train_loss_ema"`
	LogEvery       int     `toml:"log_every" comment:"print a progress line every N steps (metrics.jsonl gets every step regardless)"`
	PeakGFLOPS     float64 `toml:"peak_gflops" comment:"peak GFLOP/s of this machine for mfu (0 = this machine's FMA peak on the kernel threads from the cache that kestrel bench peak writes, $KESTREL_CACHE_DIR or ~/.cache/kestrel/peak.json, else probed for ~1 s at start-up and cached; the manifest records peak_gflops and peak_source)"`
	Precision      string  `toml:"precision" comment:"arithmetic of the matrix products: \"fp32\" (float32 throughout) or \"bf16\" (Marin's recipe: every GEMM of forward and backward — linear layers, attention, lm_head — takes bfloat16 inputs, rounded to nearest even, and sums in float32; weights, gradients, AdamW/Muon state and update, loss, log-sum-exp, softmax and norm statistics stay float32; needs a CPU with avx512_bf16, refused otherwise; mfu divides by the bf16 peak; docs/performance.md)"`
	MaxMinutes     float64 `toml:"max_minutes" comment:"stop this invocation after this many minutes of wall-clock (checked after each step; at least one step runs) with a final evaluation and checkpoint, exit 0; rerunning resumes (0 = no limit)"`

	// Micro-batches side by side (internal/replicas, docs/performance.md).
	ParallelMicroBatches int `toml:"parallel_micro_batches" comment:"run a step's micro-batches side by side on this many model replicas, each pass on one thread of the kernels' pool (replica r takes micro-batches r, r+P, …; the replicas' gradients are summed replica 0 + 1 + … in that fixed order, so the result does not depend on the threads, but it differs from 1's accumulation in one model by float rounding: another order of summation); 1 = one after the other, each pass on every thread; set it to the kernels' threads, with at least as many micro-batches a step (a start-up warning names threads or replicas left idle); data-parallel runs and MoE models fall back to 1 with a log line saying why"`

	// Data parallelism (docs/distributed.md).
	CommTimeoutSeconds float64 `toml:"comm_timeout_s" comment:"data-parallel runs (bin/kestrel-mpi under mpirun or srun): seconds a rank waits in a collective before the run stops with a SEV0 naming the rank that never reached it (must exceed the longest evaluation or checkpoint, which rank 0 does alone; 0 = wait forever)"`
}

// DefaultConfig returns the defaults of the [train] section.
func DefaultConfig() Config {
	return Config{Precision: "fp32", Steps: 2000, BatchSize: 12, EvalEvery: 250, EvalBatches: 20, ProbeSequences: 4, ValFraction: 0.1, LossEMABeta: 0.95, LogEvery: 50, CommTimeoutSeconds: 600, ParallelMicroBatches: 1}
}

// Validate reports inconsistent fields, naming them as in the config file.
func (c Config) Validate() error {
	var errs []error
	if c.Steps <= 0 {
		errs = append(errs, fmt.Errorf("train.steps must be > 0, got %d", c.Steps))
	}
	if c.BatchSize <= 0 {
		errs = append(errs, fmt.Errorf("train.batch_size must be > 0, got %d", c.BatchSize))
	}
	if c.MicroBatch < 0 {
		errs = append(errs, fmt.Errorf("train.micro_batch must be >= 0, got %d", c.MicroBatch))
	}
	if c.ParallelMicroBatches < 1 || c.ParallelMicroBatches > 64 {
		errs = append(errs, fmt.Errorf("train.parallel_micro_batches must be in [1, 64], got %d", c.ParallelMicroBatches))
	}
	if c.EvalEvery < 0 || c.EvalBatches < 0 {
		errs = append(errs, errors.New("train.eval_every and train.eval_batches must be >= 0"))
	}
	if c.ProbeSequences < 0 {
		errs = append(errs, fmt.Errorf("train.probe_sequences must be >= 0, got %d", c.ProbeSequences))
	}
	// Written so that NaN fails them (every comparison with NaN is false).
	if !(c.ValFraction >= 0 && c.ValFraction < 1) {
		errs = append(errs, fmt.Errorf("train.val_fraction must be in [0, 1), got %g", c.ValFraction))
	}
	if !(c.PeakGFLOPS >= 0) || math.IsInf(c.PeakGFLOPS, 0) {
		errs = append(errs, fmt.Errorf("train.peak_gflops must be a finite number >= 0, got %g", c.PeakGFLOPS))
	}
	if _, err := ops.ParsePrecision(c.Precision); err != nil {
		errs = append(errs, fmt.Errorf("train.precision: %w", err))
	}
	if c.MaxMinutes < 0 || math.IsNaN(c.MaxMinutes) || math.IsInf(c.MaxMinutes, 0) {
		errs = append(errs, fmt.Errorf("train.max_minutes must be a finite number >= 0, got %g", c.MaxMinutes))
	}
	if !(c.CommTimeoutSeconds >= 0) || math.IsInf(c.CommTimeoutSeconds, 0) {
		errs = append(errs, fmt.Errorf("train.comm_timeout_s must be a finite number >= 0, got %g", c.CommTimeoutSeconds))
	}
	if !(c.LossEMABeta >= 0 && c.LossEMABeta < 1) {
		errs = append(errs, fmt.Errorf("train.loss_ema_beta must be in [0, 1), got %g", c.LossEMABeta))
	}
	return errors.Join(errs...)
}
