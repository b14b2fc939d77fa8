// Package optim holds AdamW with parameter groups, learning-rate schedules,
// gradient and update-norm clipping, skip-step detection and weight EMA.
package optim

import (
	"errors"
	"fmt"
	"math"
)

// Config is the [optim] section of a run config.
type Config struct {
	LR          float64  `toml:"lr" comment:"peak learning rate"`
	MinLR       float64  `toml:"min_lr" comment:"learning rate at the end of the decay"`
	Beta1       float64  `toml:"beta1" comment:"AdamW β1"`
	Beta2       float64  `toml:"beta2" comment:"AdamW β2"`
	Eps         float64  `toml:"eps" comment:"AdamW ε"`
	WeightDecay float64  `toml:"weight_decay" comment:"decoupled weight decay (applied to matrices only by default)"`
	DecayKinds  []string `toml:"decay_kinds" comment:"tensor kinds that get weight decay (of: matrix, embedding, norm, bias); default matrices only"`
	Schedule    string   `toml:"schedule" comment:"learning-rate schedule: cosine | wsd | wsd-s | multistep | constant"`
	Warmup      int      `toml:"warmup_steps" comment:"linear warmup steps (from 0 to lr); set it to 0 to use optim.warmup_fraction"`
	// WarmupFraction is omitted when 0 so that configs without it keep their config_hash.
	WarmupFraction float64 `toml:"warmup_fraction,omitempty" comment:"linear warmup as a fraction of train.steps, rounded to a step (Marin: 0.01); in force when > 0, and then optim.warmup_steps must be 0"`
	MaxGradNorm    float64 `toml:"max_grad_norm" comment:"clip the global gradient norm to this value (0 = off)"`

	DecayFraction    float64   `toml:"decay_fraction" comment:"wsd: fraction of each cycle's steps spent decaying at its end (Marin 32B: 0.4)"`
	DecayShape       string    `toml:"decay_shape" comment:"wsd / wsd-s decay shape: linear | 1-sqrt | cosine"`
	WSDSPeriod       int       `toml:"wsds_period" comment:"wsd-s: steps from one short decay to the next (Marin 8B Kestrel: 10000)"`
	WSDSDecaySteps   int       `toml:"wsds_decay_steps" comment:"wsd-s: length of each short decay at the end of every period (Marin 8B Kestrel: 1000)"`
	MultistepAt      []float64 `toml:"multistep_at" comment:"multistep: fractions of the cycle at which the LR drops (80/10/10 = [0.8, 0.9])"`
	MultistepFactors []float64 `toml:"multistep_factors" comment:"multistep: LR multiplier after each drop (DeepSeek: [0.316, 0.1])"`
	RewarmAt         []int     `toml:"rewarm_at" comment:"re-warmup cycles: step boundaries at which the schedule restarts with a warmup (Marin 32B: [80000])"`
	RewarmSteps      int       `toml:"rewarm_steps" comment:"warmup length of every cycle after the first (Marin 32B: 1000)"`
	SqrtBatchScaling bool      `toml:"sqrt_batch_scaling" comment:"scale the LR by sqrt(B/B0) when the batch schedule changes the global batch B (B0 = the first batch)"`

	ClipUpdateNorm bool    `toml:"clip_update_norm" comment:"clip the update norm to mean + sigma·std of a rolling window of recent update norms (Levanter/Marin)"`
	UpdateSigma    float64 `toml:"update_clip_sigma" comment:"update clipping threshold in standard deviations above the rolling mean"`
	UpdateWindow   int     `toml:"update_clip_window" comment:"rolling window of update norms"`
	UpdateMinSteps int     `toml:"update_clip_min_steps" comment:"update clipping is inactive until the window holds this many norms"`

	SkipBadSteps bool    `toml:"skip_bad_steps" comment:"skip a step whose loss or grad norm exceeds mean + skip_sigma·std of the recent window: no weight or moment changes (OLMo-core/Levanter)"`
	SkipSigma    float64 `toml:"skip_sigma" comment:"skip-step threshold in standard deviations"`
	SkipWindow   int     `toml:"skip_window" comment:"rolling window of losses and grad norms for skip-step"`
	SkipMinSteps int     `toml:"skip_min_steps" comment:"skip-step is inactive until the window holds this many steps"`

	EMABeta float64 `toml:"ema_beta" comment:"EMA of the weights, evaluated separately (0 = off; Marin: 0.995)"`

	QKClipTau float64 `toml:"qk_clip_tau" comment:"QK-Clip (Kimi K2 MuonClip) threshold τ on the max pre-softmax attention logit s·q·k (the max_attn_logit vital): after each applied step, every head whose max logit over the step's micro-batches exceeded τ has its q_proj/k_proj rows scaled by √(τ/max) each (only its q_proj rows, by τ/max, when its key head is shared under GQA; with model.qk_norm the layer's q_norm and k_norm gains by √(τ/max) over its worst head), so its logit drops to τ; skipped steps clip nothing; Adam moments and the weight EMA are left as they are; qk_clipped_heads counts the heads per step (0 = off; Kimi K2: 100)"`

	// Muon (see muon.go); optim.name = "adamw" leaves everything as it was.
	Name               string   `toml:"name" comment:"optimizer: adamw | nadamw | adamc | muon. nadamw: Nesterov-momentum Adam (PyTorch's NAdam with decoupled_weight_decay=True, momentum schedule μ_t = β1·(1 − 0.5·0.96^(t·nadam_momentum_decay))); adamc: AdamW whose weight decay follows the LR schedule, λ_t = weight_decay·lr_t/lr (Defazio 2025, corrected weight decay; Marin 32B's cooldowns); muon: Muon for 2-D weight matrices, AdamW for embeddings, norms, biases, lm_head and optim.muon_exclude. The lr, warmup, schedule, weight decay, clipping and skip-step settings apply to all. kestrel rewind --set optim.name=… swaps the optimizer on a checkpoint (docs/muon.md)"`
	NAdamMomentumDecay float64  `toml:"nadam_momentum_decay" comment:"nadamw: ψ of the momentum schedule μ_t = β1·(1 − 0.5·0.96^(t·ψ)) (PyTorch's momentum_decay; 0 = constant μ = β1/2)"`
	MuonMomentum       float64  `toml:"muon_momentum" comment:"muon: momentum μ of the buffer B ← μ·B + G"`
	MuonNesterov       bool     `toml:"muon_nesterov" comment:"muon: orthogonalise G + μ·B (Nesterov) instead of B"`
	MuonNSSteps        int      `toml:"muon_ns_steps" comment:"muon: quintic Newton–Schulz iterations (3.4445, −4.7750, 2.0315)"`
	MuonEps            float64  `toml:"muon_eps" comment:"muon: ε in X₀ = D/(‖D‖_F + ε)"`
	MuonRMSScale       float64  `toml:"muon_rms_scale" comment:"muon: the orthogonalised update is scaled by muon_rms_scale·√max(rows, cols) so its RMS matches AdamW's and AdamW learning rates carry over (Moonlight: 0.2)"`
	MuonExclude        []string `toml:"muon_exclude" comment:"muon: matrix tensors updated by AdamW instead, by name or path.Match pattern (model.layers.*.mlp.gate.weight: the MoE routers); the output head by default"`

	Phases []Phase `toml:"phases,omitempty" comment:"LR phases after optim.schedule, [[optim.phases]] entries in increasing step order (docs/schedules.md): from its step (1-based metrics step) on, each entry sets the LR starting from the LR in force at the step before — kind = rewarm (from = current | min_lr, peak, steps), decay (to, steps, shape), hold, or wsds (peak, to, shape, wsds_period, wsds_decay_steps: WSD-S whose spacing changes at the entry's step); settable mid-run with kestrel rewind --set optim.phases=[...]"`

	Knobs []KnobStep `toml:"knobs,omitempty" comment:"step-indexed knob schedule, [[optim.knobs]] entries in increasing step order: from its step (1-based metrics step) on, each entry sets some of max_grad_norm, clip_update_norm, update_clip_sigma, skip_sigma, z_loss (model.z_loss), qk_clip_tau, lr_scale (a factor on the scheduled LR) and name (adamw | nadamw | adamc); knobs it leaves out keep their value (Marin 32B: step = 56400, max_grad_norm = 0.2)"`
}

// DefaultConfig returns the defaults of the [optim] section.
func DefaultConfig() Config {
	return Config{
		LR:                 1e-3,
		MinLR:              1e-4,
		Beta1:              0.9,
		Beta2:              0.99,
		Eps:                1e-8,
		WeightDecay:        0.1,
		DecayKinds:         []string{"matrix"},
		Schedule:           "cosine",
		Warmup:             100,
		MaxGradNorm:        1.0,
		DecayFraction:      0.2,
		DecayShape:         "linear",
		WSDSPeriod:         1000,
		WSDSDecaySteps:     100,
		MultistepAt:        []float64{0.8, 0.9},
		MultistepFactors:   []float64{0.316, 0.1},
		RewarmSteps:        100,
		ClipUpdateNorm:     true,
		UpdateSigma:        2.0,
		UpdateWindow:       128,
		UpdateMinSteps:     64,
		SkipBadSteps:       true,
		SkipSigma:          6.0,
		SkipWindow:         128,
		SkipMinSteps:       64,
		EMABeta:            0.995,
		Name:               "adamw",
		NAdamMomentumDecay: 4e-3,
		MuonMomentum:       0.95,
		MuonNesterov:       true,
		MuonNSSteps:        5,
		MuonEps:            1e-7,
		MuonRMSScale:       0.2,
		MuonExclude:        []string{"lm_head.weight"},
	}
}

// Validate reports inconsistent fields, naming them as in the config file.
func (c Config) Validate() error {
	var errs []error
	bad := func(f string, args ...any) { errs = append(errs, fmt.Errorf(f, args...)) }
	if c.LR <= 0 {
		bad("optim.lr must be > 0, got %g", c.LR)
	}
	if c.MinLR < 0 || c.MinLR > c.LR {
		bad("optim.min_lr must be in [0, optim.lr], got %g", c.MinLR)
	}
	if c.Beta1 < 0 || c.Beta1 >= 1 {
		bad("optim.beta1 must be in [0, 1), got %g", c.Beta1)
	}
	if c.Beta2 < 0 || c.Beta2 >= 1 {
		bad("optim.beta2 must be in [0, 1), got %g", c.Beta2)
	}
	if c.Eps <= 0 {
		bad("optim.eps must be > 0, got %g", c.Eps)
	}
	if c.WeightDecay < 0 {
		bad("optim.weight_decay must be >= 0, got %g", c.WeightDecay)
	}
	for _, k := range c.DecayKinds {
		switch k {
		case "matrix", "embedding", "norm", "bias":
		default:
			bad("optim.decay_kinds: unknown kind %q (want matrix, embedding, norm or bias)", k)
		}
	}
	switch c.Schedule {
	case "cosine", "wsd", "wsd-s", "multistep", "constant":
	default:
		bad("optim.schedule: unknown schedule %q (want cosine, wsd, wsd-s, multistep or constant)", c.Schedule)
	}
	switch c.DecayShape {
	case "linear", "1-sqrt", "cosine":
	default:
		bad("optim.decay_shape: unknown shape %q (want linear, 1-sqrt or cosine)", c.DecayShape)
	}
	if c.Warmup < 0 || c.RewarmSteps < 0 {
		bad("optim.warmup_steps and optim.rewarm_steps must be >= 0")
	}
	if !(c.WarmupFraction >= 0 && c.WarmupFraction < 1) {
		bad("optim.warmup_fraction must be in [0, 1), got %g", c.WarmupFraction)
	} else if c.WarmupFraction > 0 && c.Warmup != 0 {
		bad("optim.warmup_fraction (%g) and optim.warmup_steps (%d) are both set: exactly one warm-up is in force; set optim.warmup_steps = 0 to use the fraction", c.WarmupFraction, c.Warmup)
	}
	if c.MaxGradNorm < 0 {
		bad("optim.max_grad_norm must be >= 0, got %g", c.MaxGradNorm)
	}
	if c.DecayFraction < 0 || c.DecayFraction > 1 {
		bad("optim.decay_fraction must be in [0, 1], got %g", c.DecayFraction)
	}
	if c.Schedule == "wsd-s" && (c.WSDSPeriod <= 0 || c.WSDSDecaySteps <= 0 || c.WSDSDecaySteps > c.WSDSPeriod) {
		bad("optim.wsds_period (%d) and optim.wsds_decay_steps (%d) must be > 0 with decay <= period", c.WSDSPeriod, c.WSDSDecaySteps)
	}
	if len(c.MultistepAt) != len(c.MultistepFactors) {
		bad("optim.multistep_at (%d entries) and optim.multistep_factors (%d) must have the same length", len(c.MultistepAt), len(c.MultistepFactors))
	}
	for i, f := range c.MultistepAt {
		if f <= 0 || f >= 1 || (i > 0 && f <= c.MultistepAt[i-1]) {
			bad("optim.multistep_at must be increasing fractions in (0, 1), got %v", c.MultistepAt)
			break
		}
	}
	for i, s := range c.RewarmAt {
		if s <= 0 || (i > 0 && s <= c.RewarmAt[i-1]) {
			bad("optim.rewarm_at must be increasing positive steps, got %v", c.RewarmAt)
			break
		}
	}
	if c.ClipUpdateNorm && (c.UpdateSigma <= 0 || c.UpdateWindow < 2 || c.UpdateMinSteps < 2 || c.UpdateMinSteps > c.UpdateWindow) {
		bad("optim.update_clip_sigma must be > 0 and 2 <= optim.update_clip_min_steps <= optim.update_clip_window")
	}
	if c.SkipBadSteps && (c.SkipSigma <= 0 || c.SkipWindow < 2 || c.SkipMinSteps < 2 || c.SkipMinSteps > c.SkipWindow) {
		bad("optim.skip_sigma must be > 0 and 2 <= optim.skip_min_steps <= optim.skip_window")
	}
	if !(c.QKClipTau >= 0) || math.IsInf(c.QKClipTau, 0) {
		bad("optim.qk_clip_tau must be a finite number >= 0 (0 = off), got %g", c.QKClipTau)
	}
	if !(c.NAdamMomentumDecay >= 0) || math.IsInf(c.NAdamMomentumDecay, 0) {
		bad("optim.nadam_momentum_decay must be a finite number >= 0, got %g", c.NAdamMomentumDecay)
	}
	if c.EMABeta < 0 || c.EMABeta >= 1 {
		bad("optim.ema_beta must be in [0, 1), got %g", c.EMABeta)
	}
	if err := c.validateMuon(); err != nil {
		errs = append(errs, err)
	}
	if err := c.validatePhases(); err != nil {
		errs = append(errs, err)
	}
	if err := c.validateKnobs(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
