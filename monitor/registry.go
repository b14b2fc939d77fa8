package monitor

import (
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
}

// Categories of seed 004, in panel order.
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
)

// catalog is the registry, in dashboard panel order within each category.
var catalog = []Metric{
	// Training/Optimization
	{Name: "tokens_seen", Unit: "tokens", Kind: Counter, Category: CatTraining, Help: "cumulative non-pad target tokens trained on", Sampling: "step", Nano: true},
	{Name: "steps_seen", Unit: "steps", Kind: Counter, Category: CatTraining, Help: "optimizer updates actually applied (skipped steps do not count)", Sampling: "step", Nano: true},
	{Name: "train_loss_raw", Unit: "nats/token", Kind: Gauge, Category: CatTraining, Help: "mean cross-entropy of this step's batch over non-pad targets", Sampling: "step", Nano: true},
	{Name: "train_loss_ema", Unit: "nats/token", Kind: Gauge, Category: CatTraining, Help: "bias-corrected EMA of train_loss_raw (β = train.loss_ema_beta)", Sampling: "step", Nano: true},
	{Name: "train_ppl", Unit: "unitless", Kind: Gauge, Category: CatTraining, Help: "exp(train_loss_ema)", Sampling: "step", Nano: true},
	{Name: "learning_rate", Unit: "unitless", Kind: Gauge, Category: CatTraining, Help: "learning rate applied at this step (after schedule and debug multipliers)", Sampling: "step", Nano: true},
	{Name: "lr_phase", Unit: "phase", Kind: Gauge, Category: CatTraining, Help: "where the schedule is: warmup, rewarm, stable, decay, constant or stepN (a string in metrics.jsonl; numeric sources may report warmup progress 0..1)", Sampling: "step", Nano: true},
	{Name: "tokens_per_update", Unit: "tokens/update", Kind: Gauge, Category: CatTraining, Help: "effective global batch in non-pad tokens over the accumulation window", Sampling: "step", Nano: true},
	{Name: "grad_global_norm", Unit: "unitless", Kind: Gauge, Category: CatTraining, Help: "global L2 norm of the gradient before clipping", Sampling: "step", Nano: true},
	{Name: "grad_clipped", Unit: "bool", Kind: Gauge, Category: CatTraining, Help: "1 when gradient clipping was active this step", Sampling: "step"},
	{Name: "grad_clip_rate", Unit: "fraction", Kind: Gauge, Category: CatTraining, Help: "fraction of recent steps with gradient clipping active (kestrel train: last 100 steps; derived over monitor.window from grad_clipped when absent)", Sampling: "window", Nano: true},
	{Name: "update_norm", Unit: "unitless", Kind: Gauge, Category: CatTraining, Help: "L2 norm of the optimizer update direction (AdamW direction + weight decay, before the LR and update clipping; global or per layer)", Variants: []string{layerVar}, Sampling: "step", Nano: true},
	{Name: "update_to_weight", Unit: "unitless", Kind: Gauge, Category: CatTraining, Help: "lr·‖update‖/‖θ‖, the effective step size; carries LR spikes that update_norm does not (global or per layer)", Variants: []string{layerVar}, Sampling: "step", Nano: true},
	{Name: "update_norm_post_clip", Unit: "unitless", Kind: Gauge, Category: CatTraining, Help: "update_norm after update-norm clipping", Sampling: "step"},
	{Name: "update_clip_threshold", Unit: "unitless", Kind: Gauge, Category: CatTraining, Help: "active update-norm clip threshold (rolling mean + kσ; absent while inactive)", Sampling: "step"},
	{Name: "clipped", Unit: "bool", Kind: Gauge, Category: CatTraining, Help: "1 when the update norm was clipped this step", Sampling: "step"},
	{Name: "clipped_updates", Unit: "count", Kind: Counter, Category: CatTraining, Help: "cumulative update-norm clips", Sampling: "step"},
	{Name: "z_loss", Unit: "nats/token", Kind: Gauge, Category: CatTraining, Help: "mean z-loss term (log² of the softmax normaliser) of the batch", Sampling: "step"},
	{Name: "logit_lse_mean", Unit: "nats", Kind: Gauge, Category: CatTraining, Help: "mean log-sum-exp of the output logits", Sampling: "step"},
	{Name: "batch_size", Unit: "sequences", Kind: Gauge, Category: CatTraining, Help: "global batch in sequences at this step", Sampling: "step"},
	{Name: "param_norm", Unit: "unitless", Kind: Gauge, Category: CatTraining, Help: "L2 norm of the parameters", Variants: []string{layerVar}, Sampling: "step"},
	{Name: "skipped", Unit: "bool", Kind: Gauge, Category: CatTraining, Help: "1 when this step's update was skipped (skip-bad-steps or overflow)", Sampling: "step"},
	{Name: "skipped_updates", Unit: "count", Kind: Counter, Category: CatTraining, Help: "cumulative skipped optimizer updates", Sampling: "step", Nano: true},
	{Name: "loss_scale", Unit: "unitless", Kind: Gauge, Category: CatTraining, Help: "mixed-precision loss scale (1 in float32 training)", Sampling: "step", Nano: true},
	{Name: "overflow", Unit: "bool", Kind: Gauge, Category: CatTraining, Help: "1 when this step overflowed (mixed precision)", Sampling: "step"},
	{Name: "overflow_rate", Unit: "fraction", Kind: Gauge, Category: CatTraining, Help: "fraction of steps in the window with an overflow", Sampling: "window", Nano: true},
	{Name: "opt_state_finite", Unit: "bool", Kind: Gauge, Category: CatTraining, Help: "1 when sampled optimizer moments are all finite", Sampling: "checkpoint"},

	// Model behavior
	{Name: "max_attn_logit", Unit: "logit", Kind: Gauge, Category: CatModel, Help: "max pre-softmax attention score QKᵀ/√d (worst over layers/heads, or per layer/head); > 1000 is a red flag, τ = 100 a cap", Variants: []string{layerVar, layerHeadVar}, Sampling: "step", Nano: true},
	{Name: "attn_entropy", Unit: "nats", Kind: Gauge, Category: CatModel, Help: "mean entropy of attention probabilities (per layer/head; the unsuffixed value is the worst, i.e. lowest)", Variants: []string{layerVar, layerHeadVar}, Sampling: "step", Nano: true},
	{Name: "attn_entropy_mean", Unit: "nats", Kind: Gauge, Category: CatModel, Help: "mean attn_entropy over layers and heads (the entropy-collapse rule watches it: single sharp heads are normal, broad collapse is not)", Sampling: "step"},
	{Name: "residual_rms", Unit: "unitless", Kind: Gauge, Category: CatModel, Help: "RMS of the residual stream after each block (unsuffixed: the max over layers)", Variants: []string{layerVar}, Sampling: "step", Nano: true},
	{Name: "activation_outlier_rate", Unit: "fraction", Kind: Gauge, Category: CatModel, Help: "fraction of activations beyond kσ of their layer (unsuffixed: the max over layers)", Variants: []string{layerVar}, Sampling: "step", Nano: true},
	{Name: "logit_entropy_probe", Unit: "nats", Kind: Gauge, Category: CatModel, Help: "mean entropy of the output distribution on the fixed probe batch", Sampling: "eval"},
	{Name: "topk_mass_probe", Unit: "fraction", Kind: Gauge, Category: CatModel, Help: "mean top-k probability mass on the fixed probe batch", Sampling: "eval"},
	{Name: "output_kl_to_prev", Unit: "nats", Kind: Gauge, Category: CatModel, Help: "KL(p_t ‖ p_prev) of outputs on the probe batch between consecutive checkpoints", Sampling: "checkpoint"},

	// Data & distribution
	{Name: "source_mix_share", Unit: "fraction", Kind: Gauge, Category: CatData, Help: "share of this step's sequences drawn from each source (what the mixture weights control)", Variants: []string{sourceVar}, Sampling: "step", Nano: true},
	{Name: "pad_fraction", Unit: "fraction", Kind: Gauge, Category: CatData, Help: "padding tokens / all tokens in the batch", Sampling: "step", Nano: true},
	{Name: "token_kl_drift", Unit: "nats", Kind: Gauge, Category: CatData, Help: "KL(token histogram of the window ‖ dataset token histogram)", Sampling: "window"},
	{Name: "near_dup_rate", Unit: "fraction", Kind: Gauge, Category: CatData, Help: "within-train near-duplicate fraction from the dataset report", Sampling: "run start", Nano: true},
	{Name: "train_val_overlap", Unit: "fraction", Kind: Gauge, Category: CatData, Help: "near-duplicate overlap between train and val from the dataset report", Sampling: "run start", Nano: true},
	{Name: "bytes_per_token", Unit: "bytes/token", Kind: Gauge, Category: CatData, Help: "UTF-8 bytes per token of the dataset (junk/encoding proxy)", Sampling: "run start"},
	{Name: "seq_len_p50", Unit: "tokens", Kind: Gauge, Category: CatData, Help: "median document length in tokens", Sampling: "run start"},
	{Name: "seq_len_p95", Unit: "tokens", Kind: Gauge, Category: CatData, Help: "95th-percentile document length in tokens", Sampling: "run start"},

	// Compute
	{Name: "tokens_per_sec", Unit: "tokens/s", Kind: Gauge, Category: CatCompute, Help: "non-pad tokens trained per wall-clock second", Sampling: "step", Nano: true},
	{Name: "step_time", Unit: "s", Kind: Gauge, Category: CatCompute, Help: "wall time of the optimizer update", Sampling: "step", Nano: true},
	{Name: "data_wait_time", Unit: "s", Kind: Gauge, Category: CatCompute, Help: "part of step_time spent waiting for the batch", Sampling: "step", Nano: true},
	{Name: "forward_time", Unit: "s", Kind: Gauge, Category: CatCompute, Help: "part of step_time in forward passes", Sampling: "step", Nano: true},
	{Name: "backward_time", Unit: "s", Kind: Gauge, Category: CatCompute, Help: "part of step_time in backward passes", Sampling: "step", Nano: true},
	{Name: "forward_backward_time", Unit: "s", Kind: Gauge, Category: CatCompute, Help: "part of step_time in forward and backward passes together (when not split)", Sampling: "step"},
	{Name: "optimizer_time", Unit: "s", Kind: Gauge, Category: CatCompute, Help: "part of step_time in clipping, the optimizer and EMA", Sampling: "step", Nano: true},
	{Name: "checkpoint_time", Unit: "s", Kind: Gauge, Category: CatCompute, Help: "time to write and verify a checkpoint", Sampling: "checkpoint", Nano: true},
	{Name: "eval_time", Unit: "s", Kind: Gauge, Category: CatCompute, Help: "time of the periodic evaluation", Sampling: "eval", Nano: true},
	{Name: "mfu", Unit: "fraction", Kind: Gauge, Category: CatCompute, Help: "model FLOPs utilisation: tokens/s × FLOPs/token ÷ peak FLOP/s", Sampling: "step", Nano: true},
	{Name: "dataloader_stall_frac", Unit: "fraction", Kind: Gauge, Category: CatCompute, Help: "data_wait_time / step_time", Sampling: "step", Nano: true},

	// Evaluation/Validation
	{Name: "val_loss", Unit: "nats/token", Kind: Gauge, Category: CatEval, Help: "held-out cross-entropy (raw weights)", Sampling: "eval", Nano: true},
	{Name: "val_loss_ema", Unit: "nats/token", Kind: Gauge, Category: CatEval, Help: "held-out cross-entropy with EMA weights", Sampling: "eval"},
	{Name: "ema_gap", Unit: "nats/token", Kind: Gauge, Category: CatEval, Help: "val_loss - val_loss_ema (positive: EMA weights are better)", Sampling: "eval"},
	{Name: "val_ppl", Unit: "unitless", Kind: Gauge, Category: CatEval, Help: "exp(val_loss)", Sampling: "eval"},
	{Name: "slice_val_loss", Unit: "nats/token", Kind: Gauge, Category: CatEval, Help: "held-out cross-entropy of one source's validation split", Variants: []string{sourceVar}, Sampling: "eval", Nano: true},
	{Name: "train_val_gap", Unit: "nats/token", Kind: Gauge, Category: CatEval, Help: "val_loss - train_loss_ema", Sampling: "eval"},
	{Name: "fixed_probe_loss", Unit: "nats/token", Kind: Gauge, Category: CatEval, Help: "loss on the frozen probe batch (its hash is in manifest.json)", Sampling: "eval"},

	// Observability
	{Name: "nan_inf_events", Unit: "count", Kind: Counter, Category: CatObs, Help: "steps with a NaN/Inf in loss, gradients or weights; any > 0 is SEV0", Sampling: "step", Nano: true},
	{Name: "checkpoint_ok", Unit: "bool", Kind: Gauge, Category: CatObs, Help: "1 when the last checkpoint was written and verified; 0 is SEV0", Sampling: "checkpoint", Nano: true},
	{Name: "checkpoint_size", Unit: "bytes", Kind: Gauge, Category: CatObs, Help: "bytes written by the last checkpoint", Sampling: "checkpoint"},
	{Name: "manifest_ok", Unit: "bool", Kind: Gauge, Category: CatObs, Help: "1 when the resumed run's reproducibility manifest matches this one", Sampling: "run start"},
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
