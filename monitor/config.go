// Package monitor is kestrel's ICU panel: a registry of typed metrics,
// vitals and probes, SEV0/1/2 alerts with runbooks, a loss-spike
// classifier, and sinks (SQLite store, TensorBoard, Prometheus, Perfetto).
// It receives numbers through a small interface and never touches tensors,
// so it can watch any trainer.
package monitor

import (
	"errors"
	"fmt"
	"math"
	"strings"
)

// Config is the [monitor] section of a run config.
type Config struct {
	Enabled        bool   `toml:"enabled" comment:"run the monitor beside training"`
	PrometheusAddr string `toml:"prometheus_addr" comment:"serve Prometheus /metrics on this address while training (empty = off; use 127.0.0.1:PORT to stay on loopback)"`

	SQLite      bool   `toml:"sqlite" comment:"write metrics, events and alerts to <run>/metrics.sqlite (batched in a background goroutine)"`
	TensorBoard bool   `toml:"tensorboard" comment:"write TensorBoard event files <run>/events.out.tfevents.* (scalars and per-layer histograms)"`
	Webhook     string `toml:"webhook" comment:"POST every alert as JSON to this URL (empty = off)"`

	TraceFromStep int `toml:"trace_from_step" comment:"first step recorded in <run>/trace.json (Chrome/Perfetto trace of step phases)"`
	TraceSteps    int `toml:"trace_steps" comment:"number of steps recorded in trace.json (0 = no trace)"`

	IncidentSteps int  `toml:"incident_steps" comment:"steps of metrics and batch ids kept for a SEV0 evidence bundle"`
	PauseOnSEV0   bool `toml:"pause_on_sev0" comment:"a SEV0 alert asks the trainer to stop (it keeps the last good checkpoint)"`

	LossEMABeta float64 `toml:"loss_ema_beta" comment:"β of train_loss_ema when the trainer does not report it"`
	Window      int     `toml:"window" comment:"rolling window (steps) for robust statistics (median/MAD) and rates"`
	Cooldown    int     `toml:"cooldown" comment:"steps before the same rule may fire again"`

	SpikeZ          float64 `toml:"spike_z" comment:"loss spike: robust z-score (x-median)/(1.4826·MAD) over the window above which a step is a spike"`
	SpikeMinRise    float64 `toml:"spike_min_rise" comment:"loss spike: also require a rise of at least this fraction over the window median"`
	SpikeFollow     int     `toml:"spike_follow" comment:"steps after a spike before the classifier gives its verdict"`
	SpikeLookback   int     `toml:"spike_lookback" comment:"steps before a spike searched for grad/update-norm precursors"`
	NormZ           float64 `toml:"norm_z" comment:"robust z-score above which a grad/update norm counts as a spike"`
	ValShift        float64 `toml:"val_shift" comment:"val_loss rise (nats) after a spike that counts as 'eval shifted'"`
	SpikeCluster    int     `toml:"spike_cluster" comment:"loss spikes within cluster_window steps that make a SEV1 spike cluster"`
	ClusterWindow   int     `toml:"cluster_window" comment:"steps over which spikes are counted for a cluster"`
	SkipStormFrac   float64 `toml:"skip_storm_frac" comment:"SEV0 when this fraction of the last skip_storm_steps steps were skipped/overflowed"`
	SkipStormSteps  int     `toml:"skip_storm_steps" comment:"window (steps) of the skip/overflow storm rule"`
	AttnLogitRed    float64 `toml:"attn_logit_red" comment:"SEV1 when max_attn_logit exceeds this (Kimi K2 red flag: > 1000)"`
	AttnLogitCap    float64 `toml:"attn_logit_cap" comment:"SEV2 when max_attn_logit stays above this cap (QK-Clip τ = 100) for cooldown steps"`
	EntropyCollapse float64 `toml:"entropy_collapse" comment:"SEV1 when attn_entropy_mean (mean over heads; the worst head when only that is reported) falls below this many nats"`
	EntropyDropFrac float64 `toml:"entropy_drop_frac" comment:"SEV1 also when attn_entropy_mean falls below this fraction of its early-run median"`
	ThroughputDrop  float64 `toml:"throughput_drop" comment:"SEV1 when tokens_per_sec or mfu (median of the last quarter of the window) falls this fraction below the median before it"`
	ContentionShare float64 `toml:"contention_cpu_share" comment:"a throughput drop is SEV2 contention instead of a SEV1 throughput_drop when the process CPU time per token (cpu_time) rose by less than this share of the rise of the wall time per token: the machine is busy, kestrel's work did not grow"`
	ClipRate        float64 `toml:"clip_rate" comment:"SEV1 clip_rate_rising when the clip rate of the last window steps exceeds this, the rate of the clip_baseline steps before them was below it, and it rose by clip_rise (a recipe that clips most steps from the start, like nanoGPT's, is not rising)"`
	ClipRise        float64 `toml:"clip_rise" comment:"clip_rate_rising: rise (absolute fraction of steps) of the recent window's clip rate over the baseline's"`
	ClipBaseline    int     `toml:"clip_baseline" comment:"clip_rate_rising: steps before the recent window that make the baseline clip rate (the rule waits for window of them)"`
	MixDrift        float64 `toml:"mix_drift" comment:"SEV2 when a source's source_mix_share differs from its target weight by more than this (absolute; window mean of share − the weight of the data stage in force at each step)"`
	ValRegressEvals int     `toml:"val_regress_evals" comment:"SEV2 when val_loss rose in this many consecutive evals"`
	StallFrac       float64 `toml:"stall_frac" comment:"SEV2 when dataloader_stall_frac (window mean) exceeds this"`

	DivergenceLossFactor   float64 `toml:"divergence_loss_factor" comment:"SEV0 divergence when train_loss_raw stays above the larger of this × its window median and ln V (the loss of a uniform prediction over the model's vocabulary) for divergence_steps consecutive steps"`
	DivergenceLossMargin   float64 `toml:"divergence_loss_margin" comment:"SEV0 divergence, with no history needed (from the first step of a run, a resume or a rollback): train_loss_raw above ln V + this many nats for divergence_steps consecutive steps"`
	DivergenceMinSamples   int     `toml:"divergence_min_samples" comment:"divergence: values in the window (seeded from metrics.jsonl on a resume or rollback) before the window criteria (divergence_loss_factor, divergence_update_factor) run; the absolute criteria run from the first step"`
	DivergenceSteps        int     `toml:"divergence_steps" comment:"divergence: consecutive steps the train loss must stay above its bound"`
	DivergenceValMargin    float64 `toml:"divergence_val_margin" comment:"SEV0 divergence when val_loss exceeds ln V by more than this many nats (worse than predicting uniformly)"`
	DivergenceUpdateFactor float64 `toml:"divergence_update_factor" comment:"SEV0 divergence when update_to_weight exceeds this × its window median (and divergence_update_min): one such step rewrites the weights"`
	DivergenceUpdateMin    float64 `toml:"divergence_update_min" comment:"divergence: update_to_weight must also exceed this absolute value"`
	BatchEntropyShift      float64 `toml:"batch_entropy_shift" comment:"SEV1 batch_anomaly when a batch's batch_token_entropy differs from the median of the last window batches by more than this many nats (or 8 robust standard deviations, whichever is larger); 0 = off"`
	DivergenceUpdateRise   float64 `toml:"divergence_update_rise" comment:"SEV0 divergence when update_to_weight stays above this × the median of the 8 updates before it (and a tenth of divergence_update_min) for divergence_steps consecutive steps: an LR that jumped too high and stays there, not one bad update (a planned re-warm-up over several steps moves the median with it)"`
	DivergenceUpdateAbs    float64 `toml:"divergence_update_abs" comment:"SEV0 divergence, with no history needed: update_to_weight above this (an update as large as the weights it changes)"`

	FixedProbeJump       float64 `toml:"fixed_probe_jump" comment:"SEV2 fixed_probe_discontinuity when fixed_probe_loss moves between two evals by more than this many nats beyond what val_loss moved (|Δprobe − Δval|; |Δprobe| when an eval has no val_loss): the frozen probe batch should follow val_loss smoothly, a jump means the tokenizer, masking or preprocessing changed"`
	KLSpikeFactor        float64 `toml:"kl_spike_factor" comment:"SEV1 output_kl_spike when output_kl_to_prev at a checkpoint exceeds this × the median of the (up to 3) previous ones (at least 2 earlier checkpoints) and kl_spike_min"`
	KLSpikeMin           float64 `toml:"kl_spike_min" comment:"output_kl_spike: output_kl_to_prev must also exceed this many nats"`
	GapWidenEvals        int     `toml:"gap_widen_evals" comment:"SEV2 train_val_gap_widening when train_val_gap (val_loss − train_loss_ema), positive at the start, widened in this many consecutive evals, by gap_widen nats in all, while val_loss improved by less than the gap widened (train falls more than twice as fast as val); 0 = off"`
	GapWiden             float64 `toml:"gap_widen" comment:"train_val_gap_widening: total widening (nats) over gap_widen_evals evals"`
	SliceRegressEvals    int     `toml:"slice_regress_evals" comment:"SEV2 slice_val_regression when a source's slice_val_loss rose in this many consecutive evals (by slice_regress_min nats in all) while val_loss fell or stayed (rose by less than half as much); a source whose mixture weight a data stage lowered meanwhile is expected to rise and is left out; 0 = off"`
	SliceRegressMin      float64 `toml:"slice_regress_min" comment:"slice_val_regression: total rise (nats) of the slice over slice_regress_evals evals"`
	BenchRegressEvals    int     `toml:"bench_regress_evals" comment:"SEV2 bench_regression when an in-loop benchmark ([eval] tasks) got worse at each of this many consecutive benchmark evaluations — an accuracy (bench/…) fell, a bits per byte (bpb/…) rose — by more than the noise in all (bench_regress_sigma, bench_regress_bpb); 0 = off"`
	BenchRegressSigma    float64 `toml:"bench_regress_sigma" comment:"bench_regression: an accuracy's total fall must exceed this many standard errors of the difference, sqrt(se_first² + se_last²), from bench_stderr/… (without one recorded: this × 0.01)"`
	BenchRegressBPB      float64 `toml:"bench_regress_bpb" comment:"bench_regression: a bits-per-byte metric's total rise must exceed this fraction of its first value"`
	FlatLossWindows      int     `toml:"flat_loss_windows" comment:"SEV1 flat_loss_after_warmup: for this many windows after warm-up, the median train_loss_raw of each window must fall flat_loss_drop below the previous window's (the last window of warm-up first); 0 = off"`
	FlatLossDrop         float64 `toml:"flat_loss_drop" comment:"flat_loss_after_warmup: the least relative fall of the window median of train_loss_raw early after warm-up"`
	CheckpointTimeFactor float64 `toml:"checkpoint_time_factor" comment:"SEV2 checkpoint_time_growth when a checkpoint's checkpoint_time exceeds this × the median of the run's first (up to 3) checkpoints (at least 2 earlier ones) and that median + checkpoint_time_min"`
	CheckpointTimeMin    float64 `toml:"checkpoint_time_min" comment:"checkpoint_time_growth: the least rise (seconds) over the baseline median that counts (small checkpoints jitter by more than their size)"`

	// Liveness (monitor/liveness.go).
	StalledFactor      float64 `toml:"stalled_factor" comment:"SEV1 stalled while a training step is still running after max(stalled_factor × median step time, stalled_min_seconds); the watchdog is armed only from a step's start to its end, so evaluations and checkpoints do not count (0 = off)"`
	StalledMinSeconds  float64 `toml:"stalled_min_seconds" comment:"floor (seconds) of the stalled watchdog; before the first step completes the watchdog waits stalled_factor × this"`
	BlackoutFactor     float64 `toml:"blackout_factor" comment:"kestrel watch --follow: SEV0 monitoring_blackout when the followed source writes no record for max(blackout_factor × its median interval between records, blackout_min_seconds) (0 = off)"`
	BlackoutMinSeconds float64 `toml:"blackout_min_seconds" comment:"floor (seconds) of the monitoring_blackout rule, so a fast run does not trip on a GC pause or a long evaluation"`
	TokensFlatSteps    int     `toml:"tokens_flat_steps" comment:"SEV1 tokens_flatline when tokens_seen did not grow over this many steps while steps advanced (all-padding batches, a skipped-steps loop; 0 = off)"`

	// Mixture of experts (monitor/moe.go).
	MoEDropRate     float64 `toml:"moe_drop_rate" comment:"SEV1 moe_drop_sustained when moe_drop_rate (worst MoE layer) stays above this for moe_sustain_steps consecutive steps (seed 004: sustained > 0)"`
	MoESustainSteps int     `toml:"moe_sustain_steps" comment:"consecutive steps moe_drop_rate must stay above moe_drop_rate, or moe_dead_experts above 0, before the SEV1 MoE rules fire"`
	// Data-parallel runs (monitor/distributed.go).
	StragglerRatio float64 `toml:"straggler_ratio" comment:"SEV1 straggler when straggler_ratio (the slowest rank's step time ÷ the median rank's, step time less the time spent waiting in collectives) stays above this for straggler_steps consecutive steps with the same slowest rank; the alert names that rank and its host (0 = off)"`
	StragglerSteps int     `toml:"straggler_steps" comment:"straggler: consecutive steps the ratio must stay above straggler_ratio"`

	// Batch checks and the alert gaps of seed 004 (monitor/batchrules.go,
	// monitor/gaprules.go).
	GarbageBatchSigma   float64 `toml:"garbage_batch_sigma" comment:"SEV2 garbage_batch when one of a batch's data vitals (batch_token_entropy, batch_bytes_per_token, batch_nonletter_frac, batch_max_token_run) leaves the median of the last window batches by more than this many robust standard deviations (1.4826·MAD) and its floor; judged from the second step of a run, resume or rollback, the window frozen while batches are outside it and re-based at a data stage's start_step; 0 = off"`
	ValJump             float64 `toml:"val_jump" comment:"SEV2 val_loss_jump when one evaluation's val_loss exceeds the lowest of the (up to 3) evaluations before it by more than this many nats and val_jump_frac of it; an evaluation after a data stage's start_step (val_loss then measures another mixture) is not compared; 0 = off"`
	ValJumpFrac         float64 `toml:"val_jump_frac" comment:"val_loss_jump: the jump must also exceed this fraction of the reference val_loss"`
	RestartStormStarts  int     `toml:"restart_storm_starts" comment:"SEV2 restart_storm when the run's manifest records this many starts (fresh, resumes, automatic rollbacks) within restart_storm_minutes; 0 = off"`
	RestartStormMinutes float64 `toml:"restart_storm_minutes" comment:"restart_storm: the span (minutes) the starts are counted over"`

	// Process, optimizer-state and checkpoint vitals (monitor/memrules.go,
	// monitor/ckptrules.go).
	MemoryCreepWindow    int     `toml:"memory_creep_window" comment:"SEV1 memory_creep: steps over which the anonymous resident memory (rss_bytes − rss_file_bytes) is judged, in 8 blocks whose medians must rise at least 6 times in 7; the first max(10, window/4) steps of every start and after a rollback are ignored (0 = off)"`
	MemoryCreepMB        float64 `toml:"memory_creep_mb" comment:"memory_creep: the least growth (MiB) over memory_creep_window steps that counts (median block-to-block rise × 8: the rate over the whole window)"`
	CheckpointSizeFactor float64 `toml:"checkpoint_size_factor" comment:"SEV2 checkpoint_size_jump when a checkpoint's checkpoint_size is more than this factor larger, or smaller, than the median of the (up to 3) checkpoints before it (0 = off)"`
	LMHeadGrowth         float64 `toml:"lm_head_growth" comment:"SEV2 lm_head_norm_growth when, late in the cooldown (see lm_head_late_lr) with the LR falling, lm_head_norm rose steadily over the last window steps by more than this fraction, and faster than over the window before (0 = off)"`
	LMHeadLateLR         float64 `toml:"lm_head_late_lr" comment:"lm_head_norm_growth: late in the cooldown means learning_rate at most this fraction of the run's largest learning_rate"`

	// On track (monitor/ontrack.go): the run against its own loss-vs-tokens fit.
	OffTrackZ     float64 `toml:"off_track_z" comment:"SEV2 off_track when scaling_law_residual_z (the median of train_loss_raw − loss_fit over 50 judged steps ÷ its noise) stays above this for off_track_steps consecutive steps and the residual above off_track_min; below the fit (a cooldown) never fires"`
	OffTrackSteps int     `toml:"off_track_steps" comment:"off_track: consecutive judged steps the residual must stay above both bounds (0 = off)"`
	OffTrackMin   float64 `toml:"off_track_min" comment:"off_track: the least residual (nats/token) that counts, so a very tight fit does not alert on a negligible drift"`

	MixTargets map[string]float64 `toml:"mix_targets" comment:"target source weights for the mixture-drift rule (empty = taken from the data config by the trainer)"`
}

// DefaultConfig returns the defaults of the [monitor] section.
func DefaultConfig() Config {
	c := Config{
		Enabled:         true,
		SQLite:          true,
		TensorBoard:     true,
		TraceFromStep:   10,
		TraceSteps:      20,
		IncidentSteps:   64,
		PauseOnSEV0:     true,
		LossEMABeta:     0.95,
		Window:          64,
		Cooldown:        50,
		SpikeZ:          6,
		SpikeMinRise:    0.05,
		SpikeFollow:     40,
		SpikeLookback:   5,
		NormZ:           6,
		ValShift:        0.02,
		SpikeCluster:    3,
		ClusterWindow:   500,
		SkipStormFrac:   0.5,
		SkipStormSteps:  16,
		AttnLogitRed:    1000,
		AttnLogitCap:    100,
		EntropyCollapse: 0.05,
		EntropyDropFrac: 0.1,
		ThroughputDrop:  0.2,
		ClipRate:        0.5,
		ClipRise:        0.3,
		ClipBaseline:    256,
		ContentionShare: 0.5,
		StragglerRatio:  1.5,
		StragglerSteps:  10,
		MixDrift:        0.05,
		ValRegressEvals: 3,
		StallFrac:       0.10,
	}
	c.setRuleDefaults()
	return c
}

// setRuleDefaults sets the defaults of the alert rules' thresholds.
func (c *Config) setRuleDefaults() {
	// A ×1000 LR step on shakespeare-char lifts the loss 13× its median
	// and update_to_weight 1000×, a persistent ×100 LR lifts
	// update_to_weight 100× at every step (kestrel drill); healthy runs
	// stay below 1.5× and 3×, warm-up included.
	c.DivergenceLossFactor = 3
	c.DivergenceSteps = 3
	c.DivergenceValMargin = 0.5
	c.DivergenceUpdateFactor = 300
	c.DivergenceUpdateMin = 0.1
	c.DivergenceUpdateRise = 30
	// Healthy runs: train_loss_raw starts within 0.05 of ln V and
	// update_to_weight stays below 0.01 at lr 1e-3 (0.0004 at step 1 of
	// shakespeare-char); a ×1000 LR step gives 3.
	c.DivergenceLossMargin = 1
	c.DivergenceMinSamples = 4
	c.DivergenceUpdateAbs = 1
	// Text batches of shakespeare-char hold 3.1 ± 0.05 nats; random
	// bytes give 5.1, random BPE tokens ~2 nats more than text.
	c.BatchEntropyShift = 1
	// Healthy shakespeare-char (2,000 steps) and demo --quick replays:
	// |Δprobe − Δval| ≤ 0.07, output_kl_to_prev falls at every
	// checkpoint, the gap widens by ≤ 0.06 over 3 evals while val_loss
	// improves 4× as much, checkpoint_time varies within 1.5×.
	c.FixedProbeJump = 0.3
	c.KLSpikeFactor = 4
	c.KLSpikeMin = 0.05
	c.GapWidenEvals = 3
	c.GapWiden = 0.05
	c.SliceRegressEvals = 2
	c.SliceRegressMin = 0.02
	c.BenchRegressEvals = 3
	c.BenchRegressSigma = 2
	c.BenchRegressBPB = 0.01
	c.FlatLossWindows = 2
	c.FlatLossDrop = 0.01
	c.CheckpointTimeFactor = 2
	c.CheckpointTimeMin = 1

	c.StalledFactor = 10
	c.StalledMinSeconds = 60
	c.BlackoutFactor = 20
	c.BlackoutMinSeconds = 300
	c.TokensFlatSteps = 20

	// ontrack.go: healthy shakespeare-char and demo runs stay below
	// z = 2 above their fit; a loss 0.1 nats above it is z > 10.
	c.OffTrackZ = 4
	c.OffTrackSteps = 50
	c.OffTrackMin = 0.02

	c.MoESustainSteps = 20

	// Healthy shakespeare-char batches (12×64 bytes) sit within 4 robust
	// σ of their window on every batch vital; random base64 is 12σ
	// (entropy) and 18σ (non-letter share) out.
	c.GarbageBatchSigma = 8
	c.ValJump = 0.1
	c.ValJumpFrac = 0.05
	c.RestartStormStarts = 5
	c.RestartStormMinutes = 60

	// memrules.go, ckptrules.go: a leak of 1 MiB a step crosses 128 MiB
	// within a 240-step window; healthy runs hold their anonymous RSS
	// flat after their first steps.
	c.MemoryCreepWindow = 240
	c.MemoryCreepMB = 128
	c.CheckpointSizeFactor = 1.5
	c.LMHeadGrowth = 0.05
	c.LMHeadLateLR = 0.5
}

// Validate reports inconsistent fields, naming them as in the config file.
func (c Config) Validate() error {
	var errs []error
	pos := func(name string, v int) {
		if v <= 0 {
			errs = append(errs, fmt.Errorf("monitor.%s must be > 0, got %d", name, v))
		}
	}
	pos("window", c.Window)
	pos("spike_follow", c.SpikeFollow)
	pos("skip_storm_steps", c.SkipStormSteps)
	pos("incident_steps", c.IncidentSteps)
	pos("cluster_window", c.ClusterWindow)
	pos("clip_baseline", c.ClipBaseline)
	pos("divergence_steps", c.DivergenceSteps)
	pos("divergence_min_samples", c.DivergenceMinSamples)
	pos("moe_sustain_steps", c.MoESustainSteps)
	if !(c.MoEDropRate >= 0 && c.MoEDropRate <= 1) {
		errs = append(errs, fmt.Errorf("monitor.moe_drop_rate must be in [0, 1], got %g", c.MoEDropRate))
	}
	if c.Window < 8 {
		errs = append(errs, fmt.Errorf("monitor.window must be >= 8, got %d", c.Window))
	}
	if c.GapWidenEvals < 0 || c.SliceRegressEvals < 0 || c.FlatLossWindows < 0 || c.BenchRegressEvals < 0 {
		errs = append(errs, errors.New("monitor.gap_widen_evals, slice_regress_evals, flat_loss_windows and bench_regress_evals must be >= 0 (0 = off)"))
	}
	if c.Cooldown < 0 || c.SpikeLookback < 0 || c.TraceSteps < 0 || c.TraceFromStep < 0 {
		errs = append(errs, errors.New("monitor.cooldown, spike_lookback, trace_steps and trace_from_step must be >= 0"))
	}
	if c.LossEMABeta < 0 || c.LossEMABeta >= 1 {
		errs = append(errs, fmt.Errorf("monitor.loss_ema_beta must be in [0, 1), got %g", c.LossEMABeta))
	}
	for _, f := range []struct {
		n string
		v float64
	}{{"skip_storm_frac", c.SkipStormFrac}, {"throughput_drop", c.ThroughputDrop}, {"clip_rate", c.ClipRate}, {"stall_frac", c.StallFrac}, {"entropy_drop_frac", c.EntropyDropFrac},
		{"clip_rise", c.ClipRise}, {"contention_cpu_share", c.ContentionShare}, {"flat_loss_drop", c.FlatLossDrop}} {
		if !(f.v >= 0 && f.v <= 1) {
			errs = append(errs, fmt.Errorf("monitor.%s must be in [0, 1], got %g", f.n, f.v))
		}
	}
	for _, f := range []struct {
		n string
		v float64
	}{{"divergence_loss_factor", c.DivergenceLossFactor}, {"divergence_val_margin", c.DivergenceValMargin},
		{"divergence_update_factor", c.DivergenceUpdateFactor}, {"divergence_update_min", c.DivergenceUpdateMin},
		{"divergence_loss_margin", c.DivergenceLossMargin}, {"divergence_update_abs", c.DivergenceUpdateAbs}, {"divergence_update_rise", c.DivergenceUpdateRise},
		{"fixed_probe_jump", c.FixedProbeJump}, {"kl_spike_factor", c.KLSpikeFactor}, {"checkpoint_time_factor", c.CheckpointTimeFactor}} {
		if !(f.v > 0 && !math.IsInf(f.v, 1)) {
			errs = append(errs, fmt.Errorf("monitor.%s must be a finite number > 0, got %g", f.n, f.v))
		}
	}
	for _, f := range []struct {
		n string
		v float64
	}{{"stalled_factor", c.StalledFactor}, {"stalled_min_seconds", c.StalledMinSeconds}, {"blackout_factor", c.BlackoutFactor}, {"blackout_min_seconds", c.BlackoutMinSeconds},
		{"kl_spike_min", c.KLSpikeMin}, {"batch_entropy_shift", c.BatchEntropyShift}, {"gap_widen", c.GapWiden}, {"slice_regress_min", c.SliceRegressMin}, {"bench_regress_sigma", c.BenchRegressSigma}, {"bench_regress_bpb", c.BenchRegressBPB}, {"checkpoint_time_min", c.CheckpointTimeMin}, {"mix_drift", c.MixDrift}} {
		if !(f.v >= 0) || math.IsInf(f.v, 0) {
			errs = append(errs, fmt.Errorf("monitor.%s must be a finite number >= 0, got %g", f.n, f.v))
		}
	}
	for name, w := range c.MixTargets {
		if !(w >= 0) || math.IsInf(w, 0) {
			errs = append(errs, fmt.Errorf("monitor.mix_targets.%s must be a finite number >= 0, got %g", name, w))
		}
	}
	errs = append(errs, c.validateGaps()...)
	errs = append(errs, c.validateVitals()...)
	errs = append(errs, c.validateOnTrack()...)
	if c.TokensFlatSteps < 0 {
		errs = append(errs, fmt.Errorf("monitor.tokens_flat_steps must be >= 0, got %d", c.TokensFlatSteps))
	}
	if c.Webhook != "" && !strings.HasPrefix(c.Webhook, "http://") && !strings.HasPrefix(c.Webhook, "https://") {
		errs = append(errs, fmt.Errorf("monitor.webhook must be an http(s) URL, got %q", c.Webhook))
	}
	return errors.Join(errs...)
}
