package monitor

import (
	"regexp"
	"slices"
	"sort"
	"strings"
)

// Kind says how a metric's values combine over time.
type Kind string

// Metric kinds.
const (
	Gauge   Kind = "gauge"   // a level at a moment (loss, norm, rate)
	Counter Kind = "counter" // a running total that only grows (tokens_seen)
)

// Metric describes one name of the catalog: one name, one meaning, one unit.
type Metric struct {
	Name     string // base name, e.g. "max_attn_logit"
	Unit     string // e.g. "nats/token", "s", "fraction"
	Kind     Kind
	Category string // seed-004 category
	Help     string // one-line meaning
	// Variants lists the suffix patterns the name may carry, e.g.
	// "layer{L}/head{H}" for max_attn_logit/layer3/head1, "<source>".
	Variants []string
	Sampling string // when it is taken: step, window, eval, checkpoint, run start
	Nano     bool   // on seed 004's nano must-have list (or the per-step list)
	// NotEmitted says why kestrel's own trainer does not emit the metric
	// ("" = it does); only other trainers' logs carry it.
	NotEmitted string

	// Panel is the ID of the dashboard panel (see PanelGroups) that draws
	// the unsuffixed name and its aliases; "" when it is not charted.
	Panel string
	// VariantPanel is the ID of the panel that draws the suffixed variants
	// (name/layer3/head1, name/<source>); "" when they are not charted.
	VariantPanel string
	// Plot is the report PNG (see Plots) that draws what Panel and
	// VariantPanel chart (variants with a layer suffix at layer level
	// only); "" when the report leaves the metric out.
	Plot string
	// VariantPlot is the report PNG that draws the variants when it is not
	// Plot ("" = Plot draws them too).
	VariantPlot string
	// Aliases are names other trainers use for the same quantity (e.g. "lr"
	// for learning_rate); the dashboard draws them beside it and kestrel
	// watch reads them as the metric when no --map names it.
	Aliases []string
}

// notMixedPrecision is why kestrel does not emit the mixed-precision metrics.
const notMixedPrecision = "kestrel trains in float32, or (train.precision = \"bf16\") with bf16 GEMM inputs and float32 weights, gradients, loss and accumulation: " +
	"bf16 has float32's 8-bit exponent, so gradients need no loss scaling (fp16's 5-bit exponent is what underflows) and there is no loss scale and no overflow to report. " +
	"Rounding to bf16 turns a finite value into ±Inf only at |x| ≥ 3.3962e38 (within 2⁻⁹ of float32's largest; ops TestBF16RoundingOverflowsOnlyAtTheTop), " +
	"and such an Inf flows through its product into the loss or the gradients, where nan_inf_events counts the step (SEV0) as in float32: no separate bf16 count is kept"

// Categories of seed 004, in the order of docs/metrics.md.
const (
	CatTraining = "Training/Optimization"
	CatModel    = "Model behavior"
	CatData     = "Data & distribution"
	CatCompute  = "Compute"
	CatEval     = "Evaluation/Validation"
	CatObs      = "Observability"
)

const (
	layerVar     = "layer{L}"
	layerHeadVar = "layer{L}/head{H}"
	sourceVar    = "<source>"
	// embedVar and lmHeadVar are the per-layer optimizer norms' groups
	// below layer 0 (the token embedding) and above the last layer (the
	// final norm and lm_head; with tied embeddings only the final norm).
	embedVar  = "embed"
	lmHeadVar = "lm_head"
	// rankVar is the per-rank variant of data-parallel runs.
	rankVar = "rank{R}"
)

// optimLayerVars are the variants of the per-layer optimizer norms.
var optimLayerVars = []string{embedVar, layerVar, lmHeadVar}

// catalog is the registry, grouped by category. The dashboard's panel
// order is panelGroups', the report's is plots'.
var catalog = []Metric{
	// Training/Optimization
	{Name: "tokens_seen", Unit: "tokens", Kind: Counter, Category: CatTraining, Help: "cumulative non-pad target tokens trained on", Sampling: "step", Nano: true},
	{Name: "tokens_computed", Unit: "tokens", Kind: Counter, Category: CatTraining, Help: "cumulative token positions computed, padding included (what the FLOPs and mfu count; tokens_seen counts only non-pad targets)", Sampling: "step"},
	{Name: "steps_seen", Unit: "steps", Kind: Counter, Category: CatTraining, Help: "optimizer updates actually applied (skipped steps do not count)", Sampling: "step", Nano: true},
	{Name: "train_loss_raw", Unit: "nats/token", Kind: Gauge, Category: CatTraining, Help: "mean cross-entropy of this step's batch over non-pad targets", Sampling: "step", Nano: true, Panel: "train", Aliases: []string{"loss", "train_loss", "train/loss", "trl", "batch_loss", "epoch_loss"}},
	{Name: "train_loss_ema", Unit: "nats/token", Kind: Gauge, Category: CatTraining, Help: "bias-corrected EMA of train_loss_raw (β = train.loss_ema_beta)", Sampling: "step", Nano: true, Panel: "train", Plot: "loss.png"},
	{Name: "train_ppl", Unit: "unitless", Kind: Gauge, Category: CatTraining, Help: "exp(train_loss_ema)", Sampling: "step", Nano: true},
	{Name: "learning_rate", Unit: "unitless", Kind: Gauge, Category: CatTraining, Help: "learning rate applied at this step (after schedule and debug multipliers)", Sampling: "step", Nano: true, Panel: "lr", Plot: "lr.png", Aliases: []string{"lr", "train/lr", "train/learning_rate", "epoch_learning_rate"}},
	{Name: "lr_phase", Unit: "phase", Kind: Gauge, Category: CatTraining, Help: "where the schedule is: warmup, rewarm, stable, decay, hold, constant or stepN (a string in metrics.jsonl; numeric sources may report warmup progress 0..1)", Sampling: "step", Nano: true},
	{Name: "lr_cycle", Unit: "cycle", Kind: Gauge, Category: CatTraining, Help: "index of the LR schedule's re-warmup cycle (0 before the first rewarm)", Sampling: "step"},
	{Name: "lr_phase_entry", Unit: "entry", Kind: Gauge, Category: CatTraining, Help: "1-based index of the [[optim.phases]] entry that sets the LR (absent or 0: optim.schedule); the dashboard marks each change", Sampling: "step"},
	{Name: "tokens_per_update", Unit: "tokens/update", Kind: Gauge, Category: CatTraining, Help: "effective global batch in non-pad tokens over the accumulation window", Sampling: "step", Nano: true},
	{Name: "grad_global_norm", Unit: "unitless", Kind: Gauge, Category: CatTraining, Help: "global L2 norm of the gradient before clipping", Sampling: "step", Nano: true, Panel: "grad", Plot: "norms.png", Aliases: []string{"grad_norm", "train/grad_norm", "gnorm", "norm"}},
	{Name: "grad_clipped", Unit: "bool", Kind: Gauge, Category: CatTraining, Help: "1 when gradient clipping was active this step", Sampling: "step"},
	{Name: "grad_clip_rate", Unit: "fraction", Kind: Gauge, Category: CatTraining, Help: "fraction of recent steps with gradient clipping active (kestrel train: last 100 steps; derived over monitor.window from grad_clipped when absent)", Sampling: "window", Nano: true},
	{Name: "grad_clip_threshold", Unit: "unitless", Kind: Gauge, Category: CatTraining, Help: "gradient-norm clip threshold, when a source reports it (kestrel draws optim.max_grad_norm from config.toml instead)", Sampling: "step", Panel: "grad"},
	{Name: "update_norm", Unit: "unitless", Kind: Gauge, Category: CatTraining, Help: "L2 norm of the optimizer update direction (AdamW direction, or with optim.name = muon Muon's scaled orthogonalised momentum for the 2-D matrices, + weight decay, before the LR and update clipping; global or per layer: embed, layerL, lm_head — a jump in one layer can precede a loss spike)", Variants: optimLayerVars, Sampling: "step", Nano: true, Panel: "update", VariantPanel: "updateL", Plot: "norms.png", VariantPlot: "update_layers.png", Aliases: []string{"update_norm_pre", "update_norm_pre_clip"}},
	{Name: "update_to_weight", Unit: "unitless", Kind: Gauge, Category: CatTraining, Help: "lr·‖update‖/‖θ‖, the effective step size; carries LR spikes that update_norm does not (global or per layer)", Variants: []string{layerVar}, Sampling: "step", Nano: true, Panel: "u2w"},
	{Name: "update_norm_post_clip", Unit: "unitless", Kind: Gauge, Category: CatTraining, Help: "update_norm after update-norm clipping", Sampling: "step", Panel: "update", Plot: "norms.png", Aliases: []string{"update_norm_post"}},
	{Name: "update_clip_threshold", Unit: "unitless", Kind: Gauge, Category: CatTraining, Help: "active update-norm clip threshold (rolling mean + kσ; absent while inactive)", Sampling: "step", Panel: "update"},
	{Name: "clipped", Unit: "bool", Kind: Gauge, Category: CatTraining, Help: "1 when the update norm was clipped this step", Sampling: "step"},
	{Name: "clipped_updates", Unit: "count", Kind: Counter, Category: CatTraining, Help: "cumulative update-norm clips", Sampling: "step"},
	{Name: "z_loss", Unit: "nats/token", Kind: Gauge, Category: CatTraining, Help: "mean z-loss term (log² of the softmax normaliser) of the batch", Sampling: "step"},
	{Name: "logit_lse_mean", Unit: "nats", Kind: Gauge, Category: CatTraining, Help: "mean log-sum-exp of the output logits", Sampling: "step"},
	{Name: "batch_size", Unit: "sequences", Kind: Gauge, Category: CatTraining, Help: "global batch in sequences at this step", Sampling: "step", Panel: "noise", Plot: "noise.png"},
	{Name: "micro_batches", Unit: "count", Kind: Gauge, Category: CatTraining, Help: "forward/backward passes accumulated into this update", Sampling: "step"},
	{Name: "param_norm", Unit: "unitless", Kind: Gauge, Category: CatTraining, Help: "L2 norm of the parameters before the update (global or per layer: embed, layerL, lm_head)", Variants: optimLayerVars, Sampling: "step", Panel: "param", VariantPanel: "param"},
	{Name: "adam_m_norm", Unit: "unitless", Kind: Gauge, Category: CatTraining, Help: "L2 norm of AdamW's first moment (exp_avg; with optim.name = muon it also holds the matrices' Muon momentum) after the step (global or per layer: embed, layerL, lm_head); doubling while adam_v_norm stays put preceded loss spikes at Marin", Variants: optimLayerVars, Sampling: "step", Panel: "adamm", VariantPanel: "adamm", Plot: "adam_m.png"},
	{Name: "adam_v_norm", Unit: "unitless", Kind: Gauge, Category: CatTraining, Help: "L2 norm of AdamW's second moment (exp_avg_sq) after the step (global or per layer: embed, layerL, lm_head)", Variants: optimLayerVars, Sampling: "step", Panel: "adamv", VariantPanel: "adamv", Plot: "adam_v.png"},
	{Name: "skipped", Unit: "bool", Kind: Gauge, Category: CatTraining, Help: "1 when this step's update was skipped (skip-bad-steps or overflow)", Sampling: "step"},
	{Name: "skipped_updates", Unit: "count", Kind: Counter, Category: CatTraining, Help: "cumulative skipped optimizer updates", Sampling: "step", Nano: true},
	{Name: "loss_scale", Unit: "unitless", Kind: Gauge, Category: CatTraining, Help: "mixed-precision loss scale (1 in float32 training)", Sampling: "step", Nano: true, NotEmitted: notMixedPrecision},
	{Name: "overflow", Unit: "bool", Kind: Gauge, Category: CatTraining, Help: "1 when this step overflowed (mixed precision)", Sampling: "step", NotEmitted: notMixedPrecision},
	{Name: "overflow_rate", Unit: "fraction", Kind: Gauge, Category: CatTraining, Help: "fraction of steps in the window with an overflow", Sampling: "window", Nano: true, NotEmitted: notMixedPrecision},
	{Name: "qk_clipped_heads", Unit: "count", Kind: Gauge, Category: CatTraining, Help: "attention heads whose max logit exceeded optim.qk_clip_tau this step and whose q/k weights (or QK-Norm gains) QK-Clip rescaled (absent while QK-Clip is off)", Sampling: "step"},
	{Name: "max_grad_norm", Unit: "unitless", Kind: Gauge, Category: CatTraining, Help: "optim.max_grad_norm in force this step (the [[optim.knobs]] schedule over the config; 0 = off)", Sampling: "step", Panel: "knobs"},
	{Name: "update_clip_sigma", Unit: "unitless", Kind: Gauge, Category: CatTraining, Help: "optim.update_clip_sigma in force this step; 0 while update-norm clipping (optim.clip_update_norm) is off", Sampling: "step", Panel: "knobs"},
	{Name: "skip_sigma", Unit: "unitless", Kind: Gauge, Category: CatTraining, Help: "optim.skip_sigma in force this step; 0 while skip-step (optim.skip_bad_steps) is off", Sampling: "step", Panel: "knobs"},
	{Name: "z_loss_weight", Unit: "unitless", Kind: Gauge, Category: CatTraining, Help: "z-loss weight λ (model.z_loss) in force this step", Sampling: "step", Panel: "knobs"},
	{Name: "qk_clip_tau", Unit: "logit", Kind: Gauge, Category: CatTraining, Help: "QK-Clip threshold τ (optim.qk_clip_tau) in force this step (0 = off)", Sampling: "step", Panel: "knobs"},
	{Name: "lr_scale", Unit: "unitless", Kind: Gauge, Category: CatTraining, Help: "factor of the [[optim.knobs]] schedule on the learning rate this step (1 = none; rewind --lr-scale shows in learning_rate only)", Sampling: "step", Panel: "knobs"},
	// On track (internal/lossfit, internal/stepvitals/ontrack.go) and the gradient noise scale (internal/stepvitals/noise.go).
	{Name: "loss_fit", Unit: "nats/token", Kind: Gauge, Category: CatTraining, Help: "the run's own loss-vs-tokens fit L = E + A·(t/t0)^(−α) at this step's tokens_seen: fitted robustly (Huber) to train_loss_raw of the stable phase after warm-up, refitted every 20 steps; absent until the first fit", Sampling: "step", Panel: "train", Plot: "loss.png"},
	{Name: "loss_projection_final", Unit: "nats/token", Kind: Gauge, Category: CatTraining, Help: "the fit's train loss at the planned end (train.steps steps of the batch schedule, less padding at the rate so far): where the run is headed on its curve; a planned decay (WSD cooldown, a cosine schedule's tail) usually ends below it", Sampling: "step", Panel: "train", Plot: "loss.png"},
	{Name: "loss_projection_se", Unit: "nats/token", Kind: Gauge, Category: CatTraining, Help: "block-jackknife standard error of loss_projection_final (the fit redone with each eighth of its points left out)", Sampling: "step"},
	{Name: "scaling_law_residual", Unit: "nats/token", Kind: Gauge, Category: CatTraining, Help: "median of train_loss_raw − loss_fit over the last 50 judged steps (none in warm-up or re-warm-up): about 0 on track, below 0 in a planned decay (good news), above 0 beyond noise for monitor.off_track_steps is SEV2 off_track", Sampling: "step", Panel: "ontrack", Plot: "ontrack.png"},
	{Name: "scaling_law_residual_z", Unit: "unitless", Kind: Gauge, Category: CatTraining, Help: "scaling_law_residual ÷ its noise: the steps' robust scatter about the fit (√(π/2)·σ/√n for a median of n) and the fit's own jackknife uncertainty at this step", Sampling: "step"},
	{Name: "grad_noise_scale", Unit: "sequences", Kind: Gauge, Category: CatTraining, Help: "McCandlish et al.'s simple gradient noise scale B_simple = tr(Σ)/|G|², the batch size beyond which a larger batch stops paying (critical batch), from the gradient norms of the step's micro-batches (each the accumulated gradient's increase over its pass: no extra backward) and of the batch, |G|² and tr(Σ) each EMA-smoothed (β 0.98); absent with one micro-batch per step (train.micro_batch below the batch measures it) and while an estimate is ≤ 0", Sampling: "step", Panel: "noise", Plot: "noise.png"},
	{Name: "grad_noise_scale_tokens", Unit: "tokens", Kind: Gauge, Category: CatTraining, Help: "grad_noise_scale in tokens (× the non-pad tokens per sequence): the report's critical batch", Sampling: "step"},
	{Name: "grad_true_sq_norm", Unit: "unitless", Kind: Gauge, Category: CatTraining, Help: "EMA of the unbiased estimate of |G|², the squared norm of the full-data gradient: (B·|G_B|² − b·|G_b|²)/(B − b) over micro-batches of b and the batch of B sequences", Sampling: "step"},
	{Name: "grad_noise_trace", Unit: "unitless", Kind: Gauge, Category: CatTraining, Help: "EMA of the unbiased estimate of tr(Σ), the trace of one sequence's gradient covariance: (|G_b|² − |G_B|²)/(1/b − 1/B)", Sampling: "step"},
	{Name: "opt_state_finite", Unit: "bool", Kind: Gauge, Category: CatTraining, Help: "1 when every Adam moment is finite after the step (read from adam_m_norm and adam_v_norm, sums of squares in float64; checked again by the checkpoint restore test); 0 is SEV0 opt_state_nonfinite", Sampling: "step"},
	{Name: "lm_head_norm", Unit: "unitless", Kind: Gauge, Category: CatTraining, Help: "L2 norm of the output projection's weight (lm_head.weight; the token embedding when tied) before the update; rising late in the cooldown is SEV2 lm_head_norm_growth (left out of skipped steps)", Sampling: "step", Panel: "param"},

	// Model behavior
	{Name: "max_attn_logit", Unit: "logit", Kind: Gauge, Category: CatModel, Help: "max pre-softmax attention score QKᵀ/√d (worst over layers/heads, or per layer/head); > 1000 is a red flag, τ = 100 a cap", Variants: []string{layerVar, layerHeadVar}, Sampling: "step", Nano: true, Panel: "maxlogit", VariantPanel: "maxlogitL", Plot: "attention.png", Aliases: []string{"max_attn_logit_max"}},
	{Name: "attn_entropy", Unit: "nats", Kind: Gauge, Category: CatModel, Help: "mean entropy of attention probabilities (per layer/head; the unsuffixed value is the worst, i.e. lowest)", Variants: []string{layerVar, layerHeadVar}, Sampling: "step", Nano: true, Panel: "entropy", VariantPanel: "entropyL", Plot: "entropy.png", Aliases: []string{"attn_entropy_min"}},
	{Name: "attn_entropy_mean", Unit: "nats", Kind: Gauge, Category: CatModel, Help: "mean attn_entropy over layers and heads (the entropy-collapse rule watches it: single sharp heads are normal, broad collapse is not)", Sampling: "step"},
	{Name: "residual_rms", Unit: "unitless", Kind: Gauge, Category: CatModel, Help: "RMS of the residual stream after each block (unsuffixed: the max over layers)", Variants: []string{layerVar}, Sampling: "step", Nano: true, Panel: "resid", VariantPanel: "resid"},
	{Name: "activation_outlier_rate", Unit: "fraction", Kind: Gauge, Category: CatModel, Help: "fraction of activations beyond kσ of their layer (unsuffixed: the max over layers)", Variants: []string{layerVar}, Sampling: "step", Nano: true, Panel: "outlier", VariantPanel: "outlier"},
	{Name: "moe_load_balance_loss", Unit: "unitless", Kind: Gauge, Category: CatModel, Help: "E·Σᵢ fᵢ·Pᵢ of an MoE layer over the step's global batch (fᵢ share of top-k selections, Pᵢ mean router probability; without the weight α): 1 when balanced, up to E when one expert takes all (unsuffixed: the worst layer)", Variants: []string{layerVar}, Sampling: "step", Panel: "moebal", VariantPanel: "moebal", Plot: "moe.png"},
	{Name: "moe_util_entropy", Unit: "unitless", Kind: Gauge, Category: CatModel, Help: "entropy of an MoE layer's expert loads (top-k selections of the step) ÷ ln E: 1 = uniform, 0 = one expert (unsuffixed: the lowest layer)", Variants: []string{layerVar}, Sampling: "step", Panel: "moeent", VariantPanel: "moeent", Plot: "moe.png"},
	{Name: "moe_tokens_per_expert_min", Unit: "tokens", Kind: Gauge, Category: CatModel, Help: "fewest top-k selections of an expert in the step (unsuffixed: min over MoE layers)", Variants: []string{layerVar}, Sampling: "step", Panel: "moetok", VariantPanel: "moetok"},
	{Name: "moe_tokens_per_expert_max", Unit: "tokens", Kind: Gauge, Category: CatModel, Help: "most top-k selections of an expert in the step (unsuffixed: max over MoE layers)", Variants: []string{layerVar}, Sampling: "step", Panel: "moetok", VariantPanel: "moetok"},
	{Name: "moe_tokens_per_expert_std", Unit: "tokens", Kind: Gauge, Category: CatModel, Help: "standard deviation of the top-k selections per expert in the step (unsuffixed: max over MoE layers)", Variants: []string{layerVar}, Sampling: "step", Panel: "moetok", VariantPanel: "moetok"},
	{Name: "moe_dead_experts", Unit: "count", Kind: Gauge, Category: CatModel, Help: "experts no token selected in the step (unsuffixed: summed over MoE layers); SEV1 moe_dead_experts when sustained", Variants: []string{layerVar}, Sampling: "step", Panel: "moedrop", VariantPanel: "moedrop"},
	{Name: "moe_drop_rate", Unit: "fraction", Kind: Gauge, Category: CatModel, Help: "dropped / all top-k assignments of the step (expert capacity overflow, model.moe_capacity_factor; unsuffixed: the worst layer); Switch: typically < 1%; SEV1 moe_drop_sustained when above monitor.moe_drop_rate for monitor.moe_sustain_steps steps", Variants: []string{layerVar}, Sampling: "step", Panel: "moedrop", VariantPanel: "moedrop", Plot: "moe.png"},
	{Name: "logit_entropy_probe", Unit: "nats", Kind: Gauge, Category: CatModel, Help: "mean entropy of the output distribution on the fixed probe batch", Sampling: "eval", Panel: "probeent", Plot: "probe.png"},
	{Name: "topk_mass_probe", Unit: "fraction", Kind: Gauge, Category: CatModel, Help: "mean top-k probability mass on the fixed probe batch", Sampling: "eval", Panel: "probeent"},
	{Name: "output_kl_to_prev", Unit: "nats", Kind: Gauge, Category: CatModel, Help: "KL(p_t ‖ p_prev) of outputs on the probe batch between consecutive checkpoints", Sampling: "checkpoint", Panel: "kl", Plot: "probe_kl.png"},

	// Data & distribution
	{Name: "source_mix_share", Unit: "fraction", Kind: Gauge, Category: CatData, Help: "share of this step's non-pad target tokens drawn from each source (what the mixture weights control)", Variants: []string{sourceVar}, Sampling: "step", Nano: true, VariantPanel: "mix", Plot: "mix.png"},
	{Name: "source_mix_target", Unit: "fraction", Kind: Gauge, Category: CatData, Help: "each source's mixture weight at this step: data.sources, then the data stage in force — inside a stage's ramp_steps the linear interpolation from the mixture before, the target source_mix_share follows and mixture_drift judges against", Variants: []string{sourceVar}, Sampling: "step", VariantPanel: "mix", Plot: "mix.png"},
	{Name: "data_stage_entry", Unit: "entry", Kind: Gauge, Category: CatData, Help: "the data stage in force: i+1 for data.stages[i] (absent or 0: data.sources); the dashboard marks each stage's start", Sampling: "step"},
	{Name: "data_stage_ramp", Unit: "fraction", Kind: Gauge, Category: CatData, Help: "progress (j+1)/ramp_steps of the data stage's ramp at its j-th interpolated step (absent outside a ramp); the dashboard marks the ramp's end", Sampling: "step"},
	{Name: "batch_token_entropy", Unit: "nats", Kind: Gauge, Category: CatData, Help: "unigram entropy of the batch's target tokens: a batch of garbage (random or repeated tokens) moves it far from the run's usual value (SEV1 batch_anomaly by batch_entropy_shift, SEV2 garbage_batch by its robust band)", Sampling: "step", Panel: "batch"},
	{Name: "batch_bytes_per_token", Unit: "bytes/token", Kind: Gauge, Category: CatData, Help: "bytes the batch's target tokens decode to ÷ their number: text the tokenizer did not learn (base64, another script, binary) falls (SEV2 garbage_batch); 1 at byte level; left out when the run's vocabulary is not known", Sampling: "step", Panel: "batch"},
	{Name: "batch_nonletter_frac", Unit: "fraction", Kind: Gauge, Category: CatData, Help: "share of the batch's decoded target bytes that are neither letters (a UTF-8 letter or mark counts with all its bytes) nor whitespace: digits, punctuation, symbols, control and stray bytes; base64, markup and binary rise (SEV2 garbage_batch)", Sampling: "step", Panel: "nonletter"},
	{Name: "batch_max_token_run", Unit: "tokens", Kind: Gauge, Category: CatData, Help: "longest run of one token repeated back to back in a row of the batch's targets (padding left out): padding-like or stuck data grows it (SEV2 garbage_batch)", Sampling: "step", Panel: "nonletter"},
	{Name: "pad_fraction", Unit: "fraction", Kind: Gauge, Category: CatData, Help: "padding tokens / all tokens in the batch", Sampling: "step", Nano: true, Panel: "pad"},
	{Name: "token_kl_drift", Unit: "nats", Kind: Gauge, Category: CatData, Help: "KL(token histogram of the window ‖ dataset token histogram)", Sampling: "window"},
	{Name: "near_dup_rate", Unit: "fraction", Kind: Gauge, Category: CatData, Help: "within-train near-duplicate fraction from the dataset report", Sampling: "run start", Nano: true},
	{Name: "train_val_overlap", Unit: "fraction", Kind: Gauge, Category: CatData, Help: "near-duplicate overlap between train and val from the dataset report", Sampling: "run start", Nano: true},
	{Name: "bytes_per_token", Unit: "bytes/token", Kind: Gauge, Category: CatData, Help: "UTF-8 bytes per token of the dataset (junk/encoding proxy)", Sampling: "run start"},
	{Name: "seq_len_p50", Unit: "tokens", Kind: Gauge, Category: CatData, Help: "median document length in tokens", Sampling: "run start"},
	{Name: "seq_len_p95", Unit: "tokens", Kind: Gauge, Category: CatData, Help: "95th-percentile document length in tokens", Sampling: "run start"},

	// Compute
	{Name: "tokens_per_sec", Unit: "tokens/s", Kind: Gauge, Category: CatCompute, Help: "non-pad tokens trained per wall-clock second", Sampling: "step", Nano: true, Panel: "tps", Plot: "throughput.png"},
	{Name: "step_time", Unit: "s", Kind: Gauge, Category: CatCompute, Help: "wall time of the step: from the end of the previous step line to the end of this one, less the evaluations and checkpoints run in between (eval_time, checkpoint_time)", Sampling: "step", Nano: true, Panel: "steptime", VariantPanel: "steptime"},
	{Name: "cpu_time", Unit: "s", Kind: Gauge, Category: CatCompute, Help: "process CPU time (user+system, all threads; getrusage) over the same span as step_time: beside step_time it tells contention (wall time up, CPU time flat) from a real slowdown (both up); cpu_time / (step_time × threads) is the share of the cores the run got (the kernel pool's threads keep their cores busy watching for the next op for up to 0.5 ms after each, so an op that leaves a core idle still counts as held)", Sampling: "step"},
	{Name: "cpu_steal_frac", Unit: "fraction", Kind: Gauge, Category: CatCompute, Help: "share of the host's CPU time the hypervisor gave to other guests (the steal column of /proc/stat's cpu line, all CPUs) over the same span as step_time; Linux only: the contention rule's second witness on a virtual machine", Sampling: "step"},
	{Name: "cpu_wait_time", Unit: "s", Kind: Gauge, Category: CatCompute, Help: "seconds the process's threads were runnable but waiting for a CPU (the run delay of /proc/self/task/*/schedstat, summed over threads) over the same span as step_time; Linux only: the contention rule's witness for other processes on the same cores", Sampling: "step"},
	{Name: "involuntary_ctx_switches", Unit: "count", Kind: Gauge, Category: CatCompute, Help: "times the kernel preempted one of the process's threads (getrusage ru_nivcsw, all threads) over the same span as step_time: the contention rule's second witness for other work on the same cores", Sampling: "step"},
	{Name: "data_wait_time", Unit: "s", Kind: Gauge, Category: CatCompute, Help: "part of step_time spent waiting for the batch", Sampling: "step", Nano: true, Panel: "steptime", Aliases: []string{"data_wait_s", "data_wait_seconds"}},
	{Name: "forward_time", Unit: "s", Kind: Gauge, Category: CatCompute, Help: "part of step_time in forward passes", Sampling: "step", Nano: true, Panel: "steptime", Aliases: []string{"forward_s", "forward_seconds"}},
	{Name: "backward_time", Unit: "s", Kind: Gauge, Category: CatCompute, Help: "part of step_time in backward passes", Sampling: "step", Nano: true, Panel: "steptime", Aliases: []string{"backward_s", "backward_seconds"}},
	{Name: "forward_backward_time", Unit: "s", Kind: Gauge, Category: CatCompute, Help: "part of step_time in forward and backward passes together (when not split)", Sampling: "step", Panel: "steptime", Aliases: []string{"forward_backward_s", "forward_backward_seconds"}},
	{Name: "optimizer_time", Unit: "s", Kind: Gauge, Category: CatCompute, Help: "part of step_time in clipping, the optimizer and EMA", Sampling: "step", Nano: true, Panel: "steptime", Aliases: []string{"optimizer_s", "optimizer_seconds"}},
	{Name: "checkpoint_time", Unit: "s", Kind: Gauge, Category: CatCompute, Help: "time to write and verify a checkpoint", Sampling: "checkpoint", Nano: true, Panel: "steptime", Aliases: []string{"checkpoint_s", "checkpoint_seconds"}},
	{Name: "eval_time", Unit: "s", Kind: Gauge, Category: CatCompute, Help: "time of the periodic evaluation", Sampling: "eval", Nano: true, Panel: "steptime", Aliases: []string{"eval_s", "eval_seconds"}},
	{Name: "mfu", Unit: "fraction", Kind: Gauge, Category: CatCompute, Help: "model FLOPs utilisation: positions computed per second (padding included: the FLOPs are spent on them) × FLOPs/token ÷ peak FLOP/s; the peak is train.peak_gflops, else this machine's cached FMA peak (max of repeated probes, only raised; set it with kestrel bench peak), else probed at start-up and cached; manifest.json records peak_gflops and peak_source", Sampling: "step", Nano: true, Panel: "mfu", Plot: "mfu.png"},
	{Name: "dataloader_stall_frac", Unit: "fraction", Kind: Gauge, Category: CatCompute, Help: "data_wait_time / step_time", Sampling: "step", Nano: true, Panel: "stall"},
	{Name: "step_time_p50", Unit: "s", Kind: Gauge, Category: CatCompute, Help: "median step_time over the last 100 steps of this invocation (nearest rank)", Sampling: "window", Panel: "steptail", Plot: "step_time.png"},
	{Name: "step_time_p95", Unit: "s", Kind: Gauge, Category: CatCompute, Help: "95th-percentile step_time over the last 100 steps of this invocation (nearest rank): the tail a stall, a GC pause or a noisy neighbour leaves", Sampling: "window", Panel: "steptail", Plot: "step_time.png"},
	{Name: "forward_frac", Unit: "fraction", Kind: Gauge, Category: CatCompute, Help: "forward_time / step_time", Sampling: "step", Panel: "stepfrac"},
	{Name: "backward_frac", Unit: "fraction", Kind: Gauge, Category: CatCompute, Help: "backward_time / step_time", Sampling: "step", Panel: "stepfrac"},
	{Name: "optimizer_frac", Unit: "fraction", Kind: Gauge, Category: CatCompute, Help: "optimizer_time / step_time", Sampling: "step", Panel: "stepfrac"},
	{Name: "comm_frac", Unit: "fraction", Kind: Gauge, Category: CatCompute, Help: "data-parallel: allreduce_time / step_time, rank 0's share of the step blocked in collectives (absent in a single process)", Sampling: "step", Panel: "stepfrac"},
	{Name: "other_frac", Unit: "fraction", Kind: Gauge, Category: CatCompute, Help: "the share of step_time no phase timed (vitals, metrics, observers, scheduling): 1 − forward, backward, optimizer, data (dataloader_stall_frac) and comm fractions, at least 0", Sampling: "step", Panel: "stepfrac"},
	{Name: "rss_bytes", Unit: "bytes", Kind: Gauge, Category: CatCompute, Help: "resident set size of the process after the step (/proc/self/statm; Linux only); its peak is in the run result and the report beside the preflight estimate (manifest memory_estimate_bytes)", Sampling: "step", Panel: "memory", Plot: "memory.png"},
	{Name: "rss_file_bytes", Unit: "bytes", Kind: Gauge, Category: CatCompute, Help: "the file-backed and shared part of rss_bytes (the shared field of /proc/self/statm: memory-mapped shards, the binary): pages the kernel can drop; memory_creep judges rss_bytes less this", Sampling: "step", Panel: "memory"},
	{Name: "go_heap_bytes", Unit: "bytes", Kind: Gauge, Category: CatCompute, Help: "the Go heap the last garbage collection marked live (runtime/metrics /gc/heap/live:bytes, read without stopping the world): a leak of Go objects raises it step after step, where the heap in use saws up and down with each GC cycle; left out before the process's first collection", Sampling: "step", Panel: "memory", Plot: "memory.png"},
	{Name: "go_mapped_bytes", Unit: "bytes", Kind: Gauge, Category: CatCompute, Help: "the memory the Go runtime holds from the OS and has not returned (runtime/metrics /memory/classes/total:bytes less heap/released): between collections the heap fills towards its goal, about twice go_heap_bytes, inside it, so rss_bytes can rise for hundreds of steps with no leak; memory_creep judges the live heap and the resident memory outside this, not rss_bytes alone", Sampling: "step", Panel: "memory"},
	// Data-parallel runs (bin/kestrel-mpi; docs/distributed.md): rank 0 writes them, per rank as name/rankR.
	{Name: "rank_step_time", Unit: "s", Kind: Gauge, Category: CatCompute, Help: "data-parallel: each rank's time in the step less its time waiting in collectives (the time it needed itself), as rank_step_time/rankR", Variants: []string{rankVar}, Sampling: "step", VariantPanel: "rankstep"},
	{Name: "rank_compute_time", Unit: "s", Kind: Gauge, Category: CatCompute, Help: "data-parallel: each rank's forward and backward time, as rank_compute_time/rankR", Variants: []string{rankVar}, Sampling: "step", VariantPanel: "rankcompute"},
	{Name: "rank_allreduce_time", Unit: "s", Kind: Gauge, Category: CatCompute, Help: "data-parallel: each rank's time blocked in collectives (gradient all-reduce not hidden behind backward, loss and count reductions), as rank_allreduce_time/rankR", Variants: []string{rankVar}, Sampling: "step", VariantPanel: "rankar"},
	{Name: "rank_data_wait_time", Unit: "s", Kind: Gauge, Category: CatCompute, Help: "data-parallel: each rank's time waiting for its rows of the batch, as rank_data_wait_time/rankR", Variants: []string{rankVar}, Sampling: "step", VariantPanel: "rankdata"},
	{Name: "allreduce_time", Unit: "s", Kind: Gauge, Category: CatCompute, Help: "data-parallel: rank 0's time blocked in collectives this step", Sampling: "step", Panel: "rankar"},
	{Name: "allreduce_bytes", Unit: "bytes", Kind: Gauge, Category: CatCompute, Help: "data-parallel: float32 gradient bytes each rank all-reduces per step (4·P; a ring all-reduce sends 2(N−1)/N of it)", Sampling: "step"},
	{Name: "straggler_ratio", Unit: "ratio", Kind: Gauge, Category: CatCompute, Help: "data-parallel: the slowest rank's rank_step_time ÷ the median rank's (1 = balanced); SEV1 straggler above monitor.straggler_ratio", Sampling: "step", Panel: "straggler"},
	{Name: "straggler_rank", Unit: "rank", Kind: Gauge, Category: CatCompute, Help: "data-parallel: the rank with the largest rank_step_time this step", Sampling: "step"},
	{Name: "ranks", Unit: "count", Kind: Gauge, Category: CatCompute, Help: "data-parallel: number of ranks training (absent in a single process)", Sampling: "step"},

	// Evaluation/Validation
	{Name: "val_loss", Unit: "nats/token", Kind: Gauge, Category: CatEval, Help: "validation cross-entropy (raw weights) of the trained mixture: the per-source losses of the sources with weight > 0 in the data stage in force, weighted as the mixture draws them (the token-weighted mean over every source for a source without weights, such as bytes); a source of weight 0, a held-out domain, is only in its slice_val_loss", Sampling: "eval", Nano: true, Panel: "val", Plot: "loss.png", Aliases: []string{"val/loss", "eval_loss", "eval/loss", "validation/loss", "tel"}},
	{Name: "val_loss_ema", Unit: "nats/token", Kind: Gauge, Category: CatEval, Help: "held-out cross-entropy with EMA weights", Sampling: "eval", Panel: "val", Plot: "loss.png"},
	{Name: "ema_gap", Unit: "nats/token", Kind: Gauge, Category: CatEval, Help: "val_loss - val_loss_ema (positive: EMA weights are better)", Sampling: "eval", Panel: "gap"},
	{Name: "val_ppl", Unit: "unitless", Kind: Gauge, Category: CatEval, Help: "exp(val_loss)", Sampling: "eval"},
	{Name: "val_tokens", Unit: "tokens", Kind: Gauge, Category: CatEval, Help: "target tokens of the sources val_loss averages", Sampling: "eval"},
	{Name: "slice_val_loss", Unit: "nats/token", Kind: Gauge, Category: CatEval, Help: "held-out cross-entropy of one source's validation split", Variants: []string{sourceVar}, Sampling: "eval", Nano: true, VariantPanel: "val", Plot: "loss.png"},
	{Name: "train_val_gap", Unit: "nats/token", Kind: Gauge, Category: CatEval, Help: "val_loss - train_loss_ema", Sampling: "eval", Panel: "gap"},
	{Name: "fixed_probe_loss", Unit: "nats/token", Kind: Gauge, Category: CatEval, Help: "loss on the frozen probe batch (its hash is in manifest.json)", Sampling: "eval", Panel: "probe", Plot: "probe.png"},
	{Name: "bench", Unit: "fraction", Kind: Gauge, Category: CatEval, Help: "zero-shot multiple-choice accuracy of the in-loop benchmarks ([eval] tasks, kestrel eval): bench/<task>/acc picks the ending with the highest summed log-likelihood, bench/<task>/acc_norm the highest per byte (HellaSwag chance 0.25, PIQA 0.5)", Variants: []string{"<task>/acc", "<task>/acc_norm"}, Sampling: "eval", VariantPanel: "bench", Plot: "bench.png"},
	{Name: "bench_stderr", Unit: "fraction", Kind: Gauge, Category: CatEval, Help: "standard error of bench/<task>/<acc|acc_norm>, sqrt(p(1−p)/(n−1)) over the n items scored: the noise a benchmark's change is measured against", Variants: []string{"<task>/acc", "<task>/acc_norm"}, Sampling: "eval"},
	{Name: "bpb", Unit: "bits/byte", Kind: Gauge, Category: CatEval, Help: "bits per byte, comparable across tokenizers: bpb/wiki (WikiText-2 test), bpb/val/<source> and bpb/val (the run's validation splits), bpb/gsm8k-answer (GSM8K's gold answer given its question), bpb/heldout/<name> (the user's held-out sets, [eval] heldout)", Variants: []string{"wiki", "val", "val/<source>", "gsm8k-answer", "heldout/<name>"}, Sampling: "eval", VariantPanel: "bpb", Plot: "bpb.png"},
	{Name: "memorization", Unit: "fraction", Kind: Gauge, Category: CatEval, Help: "64 greedy tokens after a 64-token prefix (half the context each under seq_len 128) against the document's true continuation: memorization/<train|heldout>/exact_match and token_overlap; train minus heldout is what the model memorized", Variants: []string{"train/exact_match", "train/token_overlap", "heldout/exact_match", "heldout/token_overlap"}, Sampling: "eval", VariantPanel: "mem"},

	// Observability
	{Name: "nan_inf_events", Unit: "count", Kind: Counter, Category: CatObs, Help: "steps with a NaN/Inf in loss, gradients or weights; any > 0 is SEV0", Sampling: "step", Nano: true},
	{Name: "checkpoint_ok", Unit: "bool", Kind: Gauge, Category: CatObs, Help: "1 when the last checkpoint was written and verified; 0 is SEV0", Sampling: "checkpoint", Nano: true},
	{Name: "checkpoint_size", Unit: "bytes", Kind: Gauge, Category: CatObs, Help: "bytes written by the last checkpoint", Sampling: "checkpoint"},
	{Name: "manifest_ok", Unit: "bool", Kind: Gauge, Category: CatObs, Help: "1 when the resumed run's reproducibility manifest matches this one", Sampling: "run start"},
	{Name: "last_step_unix_time", Unit: "s", Kind: Gauge, Category: CatObs, Help: "heartbeat: Unix time at which the latest step completed, served on Prometheus (monitor.prometheus_addr; not in metrics.jsonl); alert from outside on time() - kestrel_last_step_time_seconds > N", Sampling: "step"},
	{Name: "seconds_since_step", Unit: "s", Kind: Gauge, Category: CatObs, Help: "heartbeat age: seconds since the latest step completed, computed when Prometheus scrapes (not in metrics.jsonl); kestrel watch --follow measures the same since the source's last record (the value of a monitoring_blackout alert)", Sampling: "step"},
}

// PanelGroup is a titled row of dashboard panels.
type PanelGroup struct {
	Title  string  `json:"title"`
	Small  bool    `json:"small,omitempty"` // compact charts
	Panels []Panel `json:"panels"`
}

// Panel is one dashboard chart. The metrics it draws are those whose
// Panel or VariantPanel names its ID; PanelGroups fills Match from them.
type Panel struct {
	ID    string `json:"id"`
	Title string `json:"title"`
	Hint  string `json:"hint,omitempty"`
	// Threshold is a config key (section.key) whose value the chart draws
	// as a dashed line.
	Threshold string `json:"threshold,omitempty"`
	// Split draws one small chart per layer of the panel's variants.
	Split bool `json:"-"`

	// Match holds regular expressions (valid in Go and JavaScript) over the
	// names a run recorded: the names the panel draws.
	Match []string `json:"match"`
	// SplitRe captures the layer index of a split panel's names;
	// SplitTitle titles each chart ($1 is the index).
	SplitRe    string `json:"split,omitempty"`
	SplitTitle string `json:"split_title,omitempty"`
}

// panelGroups is the dashboard layout: the seed-000 default panel group in
// its order (held-out loss, train loss, norms, learning rate, throughput),
// then the vitals, data and probe panels.
var panelGroups = []PanelGroup{
	{Title: "1 · Held-out loss", Panels: []Panel{
		{ID: "val", Title: "held-out loss", Hint: "overall and per source, raw and EMA weights"},
		{ID: "gap", Title: "train–val gap and EMA gap", Hint: "val − train; raw − EMA val loss"},
	}},
	{Title: "2 · Train loss", Panels: []Panel{
		{ID: "train", Title: "train loss", Hint: "raw per step (faint) and smoothed; the run's own loss-vs-tokens fit and its projection to the planned end"},
		{ID: "ontrack", Title: "residual to the loss fit", Hint: "median of loss − fit over 50 steps: 0 on track, below in a cooldown; above beyond noise is off_track"},
		{ID: "noise", Title: "gradient noise scale vs batch size (sequences)", Hint: "B_simple = tr(Σ)/|G|²: the critical batch; needs train.micro_batch below the batch"},
	}},
	{Title: "3–4 · Norms", Panels: []Panel{
		{ID: "grad", Title: "gradient norm (pre-clip)", Hint: "dashed: clip threshold", Threshold: "optim.max_grad_norm"},
		{ID: "update", Title: "update norm", Hint: "pre- and post-clip; dashed: update-clip threshold"},
		{ID: "u2w", Title: "update / weight", Hint: "relative step size"},
	}},
	{Title: "5 · Learning rate", Panels: []Panel{
		{ID: "lr", Title: "learning rate", Hint: "with schedule phase changes as events"},
		{ID: "knobs", Title: "knobs in force", Hint: "max_grad_norm, update-clip and skip σ, z-loss weight, QK-Clip τ, LR scale: steps show when a knob turned"},
	}},
	{Title: "6 · Throughput", Panels: []Panel{
		{ID: "tps", Title: "tokens / s"},
		{ID: "steptime", Title: "step time (s)", Hint: "and its decomposition"},
		{ID: "mfu", Title: "MFU"},
		{ID: "steptail", Title: "step time p50 / p95 (s)", Hint: "over the last 100 steps: the tail shows stalls the median hides"},
		{ID: "stepfrac", Title: "fractions of the step", Hint: "forward, backward, optimizer, all-reduce and the untimed rest (the data wait is the dataloader stall fraction)"},
	}},
	{Title: "Memory", Small: true, Panels: []Panel{
		{ID: "memory", Title: "process memory (bytes)", Hint: "RSS, its file-backed part and the Go heap: steady growth is SEV1 memory_creep"},
	}},
	{Title: "Ranks (data parallel)", Small: true, Panels: []Panel{
		{ID: "rankstep", Title: "step time per rank (s)", Hint: "less the time waiting in collectives"},
		{ID: "straggler", Title: "straggler ratio", Hint: "slowest ÷ median rank"},
		{ID: "rankar", Title: "all-reduce wait per rank (s)"},
		{ID: "rankcompute", Title: "compute per rank (s)"},
		{ID: "rankdata", Title: "data wait per rank (s)"},
	}},
	{Title: "Optimizer per layer", Small: true, Panels: []Panel{
		{ID: "updateL", Title: "update norm per layer", Hint: "embed, layerL, lm_head: which layer moved first"},
		{ID: "param", Title: "parameter norm", Hint: "global and per layer"},
		{ID: "adamm", Title: "Adam first moment norm", Hint: "global and per layer"},
		{ID: "adamv", Title: "Adam second moment norm", Hint: "global and per layer"},
	}},
	{Title: "Attention vitals", Small: true, Panels: []Panel{
		{ID: "maxlogit", Title: "max attention logit", Hint: "worst over layers/heads"},
		{ID: "entropy", Title: "attention entropy (nats)", Hint: "worst (min) over layers/heads"},
		{ID: "maxlogitL", Title: "max attention logit", Split: true},
		{ID: "entropyL", Title: "attention entropy", Split: true},
		{ID: "resid", Title: "residual RMS per layer"},
		{ID: "outlier", Title: "activation outlier rate (>6σ)"},
	}},
	{Title: "MoE routing", Small: true, Panels: []Panel{
		{ID: "moebal", Title: "MoE load-balance loss E·Σ fᵢPᵢ", Hint: "1 = balanced; worst and per layer"},
		{ID: "moeent", Title: "MoE expert-load entropy ÷ ln E", Hint: "1 = uniform"},
		{ID: "moetok", Title: "tokens per expert (min / max / std)"},
		{ID: "moedrop", Title: "MoE drop rate and dead experts", Hint: "sustained > 0 is SEV1"},
	}},
	{Title: "Data", Panels: []Panel{
		{ID: "mix", Title: "source mix share", Hint: "realised share and target weight per source (a stage's ramp_steps move the target linearly)"},
		{ID: "stall", Title: "dataloader stall fraction"},
		{ID: "pad", Title: "pad fraction"},
		{ID: "batch", Title: "batch token entropy (nats) and bytes per token", Hint: "each batch's vitals: garbage_batch judges them against the window"},
		{ID: "nonletter", Title: "batch non-letter share and longest token run"},
	}},
	{Title: "Benchmarks", Panels: []Panel{
		{ID: "bench", Title: "benchmark accuracy", Hint: "in-loop [eval] tasks: acc and acc_norm per task (chance: HellaSwag 0.25, PIQA 0.5)"},
		{ID: "bpb", Title: "bits per byte", Hint: "WikiText-2, validation splits, GSM8K answers: comparable across tokenizers"},
		{ID: "mem", Title: "memorization", Hint: "greedy continuation of training vs held-out documents"},
	}},
	{Title: "Probes", Panels: []Panel{
		{ID: "probe", Title: "fixed-probe loss"},
		{ID: "kl", Title: "output KL to previous checkpoint"},
		{ID: "probeent", Title: "probe logit entropy / top-k mass"},
	}},
}

// Plot is one PNG of the report (internal/report). The metrics it draws
// are those whose Plot names its File; Plots fills Match from them.
type Plot struct {
	File, Title, YLabel string
	LogY                bool
	// Baseline draws the dataset's unigram loss as a dashed reference.
	Baseline bool
	// Match holds regular expressions over the names a run recorded.
	Match []string
}

// plots are the report's PNGs in the order seed 000 reads them.
var plots = []Plot{
	{File: "loss.png", Title: "held-out and train loss, the loss-vs-tokens fit and its projection to the planned end", YLabel: "loss (nats/token)", Baseline: true},
	{File: "ontrack.png", Title: "residual to the loss-vs-tokens fit (median of loss − fit)", YLabel: "nats/token"},
	{File: "noise.png", Title: "gradient noise scale B_simple and batch size", YLabel: "sequences", LogY: true},
	{File: "norms.png", Title: "gradient norm (pre-clip) and update norm", YLabel: "L2 norm", LogY: true},
	{File: "lr.png", Title: "learning rate", YLabel: "lr"},
	{File: "throughput.png", Title: "throughput", YLabel: "tokens / s"},
	{File: "mfu.png", Title: "model FLOPs utilisation", YLabel: "MFU"},
	{File: "step_time.png", Title: "step time p50 and p95 (last 100 steps)", YLabel: "s"},
	{File: "memory.png", Title: "process memory: RSS and Go heap", YLabel: "bytes"},
	{File: "update_layers.png", Title: "update norm per layer (embed, layerL, lm_head)", YLabel: "L2 norm", LogY: true},
	{File: "adam_m.png", Title: "Adam first moment norm (global and per layer)", YLabel: "L2 norm", LogY: true},
	{File: "adam_v.png", Title: "Adam second moment norm (global and per layer)", YLabel: "L2 norm", LogY: true},
	{File: "attention.png", Title: "max attention logit per layer", YLabel: "logit"},
	{File: "entropy.png", Title: "attention entropy per layer", YLabel: "nats"},
	{File: "moe.png", Title: "MoE routing: load-balance loss, load entropy, drop rate", YLabel: "unitless"},
	{File: "mix.png", Title: "source mix share and target weight", YLabel: "share of sequences"},
	{File: "bench.png", Title: "in-loop benchmarks: accuracy", YLabel: "accuracy"},
	{File: "bpb.png", Title: "in-loop benchmarks: bits per byte", YLabel: "bits / byte"},
	{File: "probe.png", Title: "frozen probe batch: loss and output entropy", YLabel: "nats"},
	{File: "probe_kl.png", Title: "output KL to the previous checkpoint (probe batch)", YLabel: "nats", LogY: true},
}

// basePatterns matches the unsuffixed name and its aliases.
func (m *Metric) basePatterns() []string {
	out := []string{"^" + regexp.QuoteMeta(m.Name) + "$"}
	for _, a := range m.Aliases {
		out = append(out, "^"+regexp.QuoteMeta(a)+"$")
	}
	return out
}

// variantPattern matches the suffixed variants; with layer variants and
// layerOnly, only the per-layer ones (name/layer3 and the embed and lm_head
// groups where registered, not name/layer3/head1).
func (m *Metric) variantPattern(layerOnly bool) string {
	if layerOnly && slices.Contains(m.Variants, layerVar) {
		alt := `layer\d+`
		for _, v := range []string{embedVar, lmHeadVar} {
			if slices.Contains(m.Variants, v) {
				alt += "|" + regexp.QuoteMeta(v)
			}
		}
		return "^" + regexp.QuoteMeta(m.Name) + "/(?:" + alt + ")$"
	}
	return "^" + regexp.QuoteMeta(m.Name) + "/.+"
}

// variantPlot is the report PNG that draws m's variants ("" = none).
func (m *Metric) variantPlot() string {
	if m.VariantPanel == "" {
		return ""
	}
	if m.VariantPlot != "" {
		return m.VariantPlot
	}
	return m.Plot
}

// PanelGroups returns the dashboard layout (a copy) with each panel's Match
// (and SplitRe) filled from the registry.
func PanelGroups() []PanelGroup {
	out := make([]PanelGroup, len(panelGroups))
	for gi, g := range panelGroups {
		g.Panels = append([]Panel(nil), g.Panels...)
		for pi := range g.Panels {
			p := &g.Panels[pi]
			var split []string
			for i := range catalog {
				m := &catalog[i]
				if m.Panel == p.ID {
					p.Match = append(p.Match, m.basePatterns()...)
				}
				if m.VariantPanel == p.ID {
					p.Match = append(p.Match, m.variantPattern(false))
					split = append(split, regexp.QuoteMeta(m.Name))
				}
			}
			if p.Split && len(split) > 0 {
				p.SplitRe = "^(?:" + strings.Join(split, "|") + `)/(?:layer)?(\d+)`
				p.SplitTitle = "layer $1"
			}
		}
		out[gi] = g
	}
	return out
}

// Plots returns the report's plots (a copy) with each Match filled from
// the registry.
func Plots() []Plot {
	out := append([]Plot(nil), plots...)
	for i := range out {
		p := &out[i]
		for j := range catalog {
			m := &catalog[j]
			if m.Plot == p.File && m.Panel != "" {
				p.Match = append(p.Match, m.basePatterns()...)
			}
			if m.variantPlot() == p.File {
				p.Match = append(p.Match, m.variantPattern(true))
			}
		}
	}
	return out
}

var byName = func() map[string]*Metric {
	m := make(map[string]*Metric, len(catalog))
	for i := range catalog {
		m[catalog[i].Name] = &catalog[i]
	}
	return m
}()

// Metrics returns the registry in panel order (a copy).
func Metrics() []Metric { return append([]Metric(nil), catalog...) }

// BaseName strips a per-layer/head/source suffix: "max_attn_logit/layer3/head1"
// gives "max_attn_logit".
func BaseName(name string) string {
	if i := strings.IndexByte(name, '/'); i >= 0 {
		return name[:i]
	}
	return name
}

// Lookup returns the registry entry of name (suffixes allowed) and whether
// the name is known.
func Lookup(name string) (Metric, bool) {
	m, ok := byName[BaseName(name)]
	if !ok {
		return Metric{}, false
	}
	return *m, true
}

// NanoMustHaves returns the names on the nano must-have list, sorted.
func NanoMustHaves() []string {
	var out []string
	for _, m := range catalog {
		if m.Nano {
			out = append(out, m.Name)
		}
	}
	sort.Strings(out)
	return out
}
