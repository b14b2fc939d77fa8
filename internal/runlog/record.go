package runlog

import (
	"math"
	"sort"
	"time"
)

// The records of a run. kestrel's trainer produces them, the monitor reads
// their values, and metrics.jsonl, alerts.jsonl and metrics.sqlite store
// them. Every field has one name (the seed-004 catalog, docs/metrics.md),
// one meaning and one unit; times are seconds unless a name says otherwise.

// Step is one optimizer step: one line of metrics.jsonl.
type Step struct {
	Step       int     // 1-based optimizer step
	TokensSeen int64   // non-pad target tokens trained on, up to and including this step
	WallTime   float64 // seconds of training since the run began, summed over resumes
	UnixTime   float64 // Unix seconds when the step began
	// StepsSeen counts the optimizer updates applied (skipped steps do not).
	StepsSeen int
	// TokensPerUpdate is this step's non-pad target tokens (the effective
	// global batch over the accumulation window).
	TokensPerUpdate int64
	// TokensComputed counts every position computed, padding included, up
	// to and including this step: what the FLOPs (and mfu) count.
	TokensComputed int64

	TrainLossRaw float64 // mean cross-entropy of this step's batch (nats/token)
	TrainLossEMA float64 // bias-corrected EMA of train_loss_raw
	ZLoss        float64 // mean z-loss term of the batch

	LearningRate float64 // the LR applied (after batch scaling and debug factors)
	LRPhase      string  // warmup | rewarm | stable | decay | hold | constant | stepN
	LRCycle      int     // re-warmup cycle index
	LRPhaseEntry int     // 1-based [[optim.phases]] entry in force; 0 (not written): optim.schedule
	BatchSize    int     // global batch in sequences
	MicroBatches int     // forward/backward passes accumulated

	GradGlobalNorm      float64  // before clipping
	GradClipped         bool     // grad norm was clipped to max_grad_norm
	UpdateNorm          float64  // AdamW direction + decay, before update clipping
	UpdateNormPostClip  float64  // after update clipping
	UpdateClipThreshold *float64 // active threshold (nil while update clipping is inactive)
	UpdateToWeight      float64  // lr·‖update‖/‖θ‖
	ParamNorm           float64
	Clipped             bool // the update was clipped
	Skipped             bool // the step was skipped as an outlier
	SkipReason          string
	SkippedUpdates      int     // cumulative
	ClippedUpdates      int     // cumulative update clips
	GradClipRate        float64 // fraction of the last 100 steps with grad clipping
	NaNInfEvents        int

	// Contention witnesses over the same span as CPUTime: the share of the
	// host's CPU time stolen by the hypervisor (/proc/stat), this
	// process's involuntary context switches (getrusage) and the seconds
	// its threads were runnable but waited for a CPU (schedstat run
	// delay); left out unless StealMeasured / CtxSwitchesMeasured /
	// WaitMeasured.
	CPUStealFrac           float64
	InvoluntaryCtxSwitches int64
	CPUWaitTime            float64
	StealMeasured          bool
	CtxSwitchesMeasured    bool
	WaitMeasured           bool

	TokensPerSec        float64 // non-pad target tokens of this step ÷ step_time
	StepTime            float64 // wall time since the previous step line
	CPUTime             float64 // process CPU seconds (user+system, all threads) since the previous step line; 0 = not measured (left out)
	DataWaitTime        float64
	ForwardTime         float64 // forward passes incl. the loss head, all micro-batches
	BackwardTime        float64 // backward passes, all micro-batches
	OptimizerTime       float64
	CheckpointTime      float64 // checkpoint writes since the previous step line
	EvalTime            float64 // evaluation since the previous step line
	DataloaderStallFrac float64 // data_wait_time / step_time
	PadFraction         float64 // targets < 0 (no loss) / all target positions of the batch
	BatchTokenEntropy   float64 // unigram entropy (nats) of the batch's target tokens
	BatchEntropyTokens  int     // the target tokens BatchTokenEntropy counted (not written); 0 = not measured (left out)
	MFU                 float64 // FLOPs of the positions computed (padding included) per second ÷ the FMA peak

	// The batch's text vitals (internal/stepvitals/batch.go): bytes its
	// target tokens decode to per token, the share of those bytes that are
	// neither letters nor whitespace (written when BatchTextMeasured: the
	// run's vocabulary is known), and the longest run of one repeated
	// target token in a row (written with batch_token_entropy).
	BatchBytesPerToken float64
	BatchNonLetterFrac float64
	BatchTextMeasured  bool
	BatchMaxTokenRun   int

	MaxAttnLogit          float64 // max over layers and heads
	AttnEntropy           float64 // min over layers and heads (worst)
	ResidualRMS           float64 // max over layers
	ActivationOutlierRate float64 // max over layers
	LogitLSEMean          float64

	// AdamMNorm and AdamVNorm are the global L2 norms of AdamW's first and
	// second moments after the step (per layer in PerLayer as
	// adam_m_norm/layerL etc.).
	AdamMNorm float64
	AdamVNorm float64

	// QKClippedHeads is the number of attention heads QK-Clip rescaled
	// after this step (optim.qk_clip_tau); nil (left out) when QK-Clip is off.
	QKClippedHeads *int

	// Knobs in force at this step (optim.knobs schedule over the config,
	// after rewind --set overrides), written every step so a chart shows
	// when one turned.
	KnobMaxGradNorm float64 // optim.max_grad_norm (0 = off)
	KnobUpdateSigma float64 // optim.update_clip_sigma, 0 while update clipping is off
	KnobSkipSigma   float64 // optim.skip_sigma, 0 while skip-step is off
	KnobZLoss       float64 // model.z_loss weight
	KnobQKClipTau   float64 // optim.qk_clip_tau (0 = off)
	KnobLRScale     float64 // factor of the knob schedule on the LR (1 = none)

	// PerLayer holds the per-layer/head vitals and optimizer norms under
	// their full names, such as "max_attn_logit/layer3/head1" or
	// "update_norm/embed".
	PerLayer map[string]float64
	// SourceMixShare is the share of this step's non-pad target tokens from
	// each source, stored as "source_mix_share/<source>".
	SourceMixShare map[string]float64
	// SourceMixTarget is the mixture weight of each source at this step
	// (the data stage in force, interpolated inside its ramp), stored as
	// "source_mix_target/<source>".
	SourceMixTarget map[string]float64
	// DataStageEntry is the data stage in force at this step: i+1 for
	// data.stages[i], 0 (not written) for data.sources.
	DataStageEntry int
	// DataStageRamp is the progress (j+1)/ramp_steps of the stage's ramp
	// at its j-th interpolated step; 0 (not written) outside a ramp.
	DataStageRamp float64
	// Spans are the measured phases of the step in order (data_wait,
	// forward and backward per micro-batch, then optimizer), for trace.json;
	// they are not part of metrics.jsonl.
	Spans []Span
	// OpSpans are the model's per-op spans of a traced step (per layer
	// attention, MLP and their GEMMs, lm_head, cross-entropy, the backward
	// ops), nested inside the forward and backward spans, named as
	// "layer3/qkv_gemm" or "lm_head"; empty unless the step is traced. Not
	// part of metrics.jsonl.
	OpSpans []Span
	// MoE holds the mixture-of-experts routing vitals; nil (left out)
	// for dense models.
	MoE *MoEStep
	// OnTrack is the loss-vs-tokens fit's reading (scaling_law_residual,
	// loss_projection_final …); nil (left out) before the first fit.
	OnTrack *OnTrack
	// NoiseScale is the gradient noise scale (grad_noise_scale …); nil
	// (left out) when the step had one micro-batch.
	NoiseScale *NoiseScale
	// Vitals are the process's memory, the step-time tails and fractions,
	// lm_head_norm and opt_state_finite (vitals.go); each left out when
	// not measured.
	Vitals StepVitals
}

// Span is one measured phase of a step.
type Span struct {
	Name  string
	Start time.Time
	Dur   time.Duration
}

// fields visits the step's fields in metrics.jsonl order.
func (s *Step) fields(w fieldVisitor) {
	w.int("step", int64(s.Step))
	w.int("tokens_seen", s.TokensSeen)
	w.float("wall_time", s.WallTime)
	w.float("unix_time", s.UnixTime)
	w.int("steps_seen", int64(s.StepsSeen))
	w.int("tokens_per_update", s.TokensPerUpdate)
	w.int("tokens_computed", s.TokensComputed)
	w.float("train_loss_raw", s.TrainLossRaw)
	w.float("train_loss_ema", s.TrainLossEMA)
	w.float("z_loss", s.ZLoss)
	w.float("learning_rate", s.LearningRate)
	w.str("lr_phase", s.LRPhase)
	w.int("lr_cycle", int64(s.LRCycle))
	if s.LRPhaseEntry > 0 {
		w.int("lr_phase_entry", int64(s.LRPhaseEntry))
	}
	w.int("batch_size", int64(s.BatchSize))
	w.int("micro_batches", int64(s.MicroBatches))
	w.float("grad_global_norm", s.GradGlobalNorm)
	w.bool("grad_clipped", s.GradClipped)
	w.float("update_norm", s.UpdateNorm)
	w.float("update_norm_post_clip", s.UpdateNormPostClip)
	if s.UpdateClipThreshold != nil {
		w.float("update_clip_threshold", *s.UpdateClipThreshold)
	}
	w.float("update_to_weight", s.UpdateToWeight)
	w.float("param_norm", s.ParamNorm)
	w.bool("clipped", s.Clipped)
	w.bool("skipped", s.Skipped)
	if s.SkipReason != "" {
		w.str("skip_reason", s.SkipReason)
	}
	w.int("skipped_updates", int64(s.SkippedUpdates))
	w.int("clipped_updates", int64(s.ClippedUpdates))
	w.float("grad_clip_rate", s.GradClipRate)
	w.int("nan_inf_events", int64(s.NaNInfEvents))
	w.float("tokens_per_sec", s.TokensPerSec)
	w.float("step_time", s.StepTime)
	if s.CPUTime > 0 {
		w.float("cpu_time", s.CPUTime)
	}
	if s.StealMeasured {
		w.float("cpu_steal_frac", s.CPUStealFrac)
	}
	if s.CtxSwitchesMeasured {
		w.int("involuntary_ctx_switches", s.InvoluntaryCtxSwitches)
	}
	if s.WaitMeasured {
		w.float("cpu_wait_time", s.CPUWaitTime)
	}
	w.float("data_wait_time", s.DataWaitTime)
	w.float("forward_time", s.ForwardTime)
	w.float("backward_time", s.BackwardTime)
	w.float("optimizer_time", s.OptimizerTime)
	w.float("checkpoint_time", s.CheckpointTime)
	w.float("eval_time", s.EvalTime)
	w.float("dataloader_stall_frac", s.DataloaderStallFrac)
	w.float("pad_fraction", s.PadFraction)
	if s.BatchEntropyTokens > 0 {
		w.float("batch_token_entropy", s.BatchTokenEntropy)
		w.int("batch_max_token_run", int64(s.BatchMaxTokenRun))
	}
	if s.BatchTextMeasured {
		w.float("batch_bytes_per_token", s.BatchBytesPerToken)
		w.float("batch_nonletter_frac", s.BatchNonLetterFrac)
	}
	w.float("mfu", s.MFU)
	w.float("max_attn_logit", s.MaxAttnLogit)
	w.float("attn_entropy", s.AttnEntropy)
	w.float("residual_rms", s.ResidualRMS)
	w.float("activation_outlier_rate", s.ActivationOutlierRate)
	w.float("logit_lse_mean", s.LogitLSEMean)
	w.float("adam_m_norm", s.AdamMNorm)
	w.float("adam_v_norm", s.AdamVNorm)
	if s.QKClippedHeads != nil {
		w.int("qk_clipped_heads", int64(*s.QKClippedHeads))
	}
	w.float("max_grad_norm", s.KnobMaxGradNorm)
	w.float("update_clip_sigma", s.KnobUpdateSigma)
	w.float("skip_sigma", s.KnobSkipSigma)
	w.float("z_loss_weight", s.KnobZLoss)
	w.float("qk_clip_tau", s.KnobQKClipTau)
	w.float("lr_scale", s.KnobLRScale)
	if s.MoE != nil {
		s.MoE.fields(w)
	}
	s.OnTrack.fields(w)
	s.NoiseScale.fields(w)
	s.Vitals.fields(w)
	if s.DataStageEntry > 0 {
		w.int("data_stage_entry", int64(s.DataStageEntry))
	}
	if s.DataStageRamp > 0 {
		w.float("data_stage_ramp", s.DataStageRamp)
	}
	flat := make(map[string]float64, len(s.PerLayer)+len(s.SourceMixShare))
	for k, v := range s.SourceMixShare {
		flat["source_mix_share/"+k] = v
	}
	for k, v := range s.SourceMixTarget {
		flat["source_mix_target/"+k] = v
	}
	for k, v := range s.PerLayer {
		flat[k] = v
	}
	visitSorted(w, flat, "")
}

// Eval is one evaluation: a line of metrics.jsonl at the step it ran after.
type Eval struct {
	Step        int
	TokensSeen  int64
	WallTime    float64
	ValLoss     float64 // raw weights (nats/token)
	ValLossEMA  float64 // EMA weights; NaN (left out) when the run keeps no EMA
	TrainValGap float64 // val_loss − train_loss_ema
	ValTokens   int
	EvalTime    float64 // seconds this evaluation took
	// Probe-batch measurements; NaN (left out) when the run has no probes.
	FixedProbeLoss    float64
	LogitEntropyProbe float64
	TopKMassProbe     float64
	// SliceValLoss is val_loss per source, stored as "slice_val_loss/<source>".
	SliceValLoss map[string]float64
	// Bench holds the in-loop benchmarks' numbers under their full metric
	// names (bench/hellaswag/acc_norm, bench_stderr/…, bpb/wiki,
	// memorization/train/exact_match; docs/eval.md); empty at evaluations
	// that ran none.
	Bench map[string]float64
}

// EMAGap is val_loss − val_loss_ema (NaN without EMA).
func (e *Eval) EMAGap() float64 { return e.ValLoss - e.ValLossEMA }

func (e *Eval) fields(w fieldVisitor) {
	w.int("step", int64(e.Step))
	w.int("tokens_seen", e.TokensSeen)
	w.float("wall_time", e.WallTime)
	w.float("val_loss", e.ValLoss)
	w.float("val_ppl", math.Exp(e.ValLoss))
	optional(w, "val_loss_ema", e.ValLossEMA)
	optional(w, "ema_gap", e.EMAGap())
	w.float("train_val_gap", e.TrainValGap)
	w.int("val_tokens", int64(e.ValTokens))
	w.float("eval_time", e.EvalTime)
	optional(w, "fixed_probe_loss", e.FixedProbeLoss)
	optional(w, "logit_entropy_probe", e.LogitEntropyProbe)
	optional(w, "topk_mass_probe", e.TopKMassProbe)
	visitSorted(w, e.SliceValLoss, "slice_val_loss/")
	visitSorted(w, e.Bench, "")
}

// Checkpoint is a committed checkpoint: a line of metrics.jsonl with
// "event": "checkpoint" at the step it holds.
type Checkpoint struct {
	Step       int
	TokensSeen int64
	WallTime   float64
	Dir        string
	Kind       string  // rolling | permanent | final | interrupt | time_limit
	Seconds    float64 // time to write and verify it
	Bytes      int64
	// OutputKLToPrev is output_kl_to_prev on the probe batch against the
	// previous checkpoint; NaN (left out) when there is none or no probes.
	OutputKLToPrev float64
	Deleted        []string // rolling checkpoints removed by the keep policy (not stored)
	// Failed says why the checkpoint failed its verification after the
	// write ("" = verified): checkpoint_ok is then 0 (vitals.go).
	Failed string
}

func (c *Checkpoint) fields(w fieldVisitor) {
	w.int("step", int64(c.Step))
	w.int("tokens_seen", c.TokensSeen)
	w.float("wall_time", c.WallTime)
	w.str("event", "checkpoint")
	w.str("checkpoint_kind", c.Kind)
	w.int("checkpoint_ok", c.ok())
	if c.Failed != "" {
		w.str("checkpoint_error", c.Failed)
	}
	w.float("checkpoint_time", c.Seconds)
	w.int("checkpoint_size", c.Bytes)
	optional(w, "output_kl_to_prev", c.OutputKLToPrev)
}

// NaNStop is the line written when a loss, gradient or update was not
// finite: the step was not applied and the run stopped.
type NaNStop struct {
	Step    int
	Message string
}

func (n *NaNStop) fields(w fieldVisitor) {
	w.int("step", int64(n.Step))
	w.str("event", "nan_inf")
	w.str("message", n.Message)
	w.int("nan_inf_events", 1)
}

// Line is a record of metrics.jsonl: *Step, *Eval, *Checkpoint or *NaNStop.
type Line interface {
	fields(fieldVisitor)
}

// Values returns the numeric fields of a record under their metric names,
// as the monitor and the metrics store take them: booleans are 0 or 1,
// fields left out of the line are absent, and the axes step, wall_time and
// unix_time are not values (tokens_seen is).
func Values(l Line, into map[string]float64) map[string]float64 {
	if into == nil {
		into = map[string]float64{}
	}
	l.fields(valueCollector(into))
	return into
}

// fieldVisitor receives a record's fields in order.
type fieldVisitor interface {
	int(name string, v int64)
	float(name string, v float64)
	bool(name string, v bool)
	str(name, v string)
}

// optional visits v unless it is NaN (a measurement that was not taken).
func optional(w fieldVisitor, name string, v float64) {
	if v == v {
		w.float(name, v)
	}
}

func visitSorted(w fieldVisitor, m map[string]float64, prefix string) {
	if len(m) == 0 {
		return
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		w.float(prefix+k, m[k])
	}
}

// axes are the fields that place a record rather than measure it.
var axes = map[string]bool{"step": true, "wall_time": true, "unix_time": true}

type valueCollector map[string]float64

func (c valueCollector) int(n string, v int64) {
	if !axes[n] {
		c[n] = float64(v)
	}
}

func (c valueCollector) float(n string, v float64) {
	if !axes[n] {
		c[n] = v
	}
}

func (c valueCollector) bool(n string, v bool) {
	if v {
		c[n] = 1
	} else {
		c[n] = 0
	}
}

func (c valueCollector) str(string, string) {}
