package optim

import (
	"errors"
	"fmt"
	"math"
)

// KnobStep is one entry of the step-indexed knob schedule ([[optim.knobs]]):
// from metrics step Step (1-based) on, every knob it sets holds until a
// later entry sets it again; a knob it leaves unset (nil) keeps its value.
type KnobStep struct {
	Step           int      `toml:"step" comment:"metrics step (1-based) from which this entry's knobs hold"`
	MaxGradNorm    *float64 `toml:"max_grad_norm,omitempty" comment:"optim.max_grad_norm from this step on (0 = off)"`
	ClipUpdateNorm *bool    `toml:"clip_update_norm,omitempty" comment:"optim.clip_update_norm from this step on"`
	UpdateSigma    *float64 `toml:"update_clip_sigma,omitempty" comment:"optim.update_clip_sigma from this step on"`
	SkipSigma      *float64 `toml:"skip_sigma,omitempty" comment:"optim.skip_sigma from this step on"`
	ZLoss          *float64 `toml:"z_loss,omitempty" comment:"model.z_loss (z-loss weight) from this step on"`
	QKClipTau      *float64 `toml:"qk_clip_tau,omitempty" comment:"optim.qk_clip_tau from this step on (0 = off)"`
	LRScale        *float64 `toml:"lr_scale,omitempty" comment:"factor on the scheduled learning rate from this step on (1 = none)"`
	Name           *string  `toml:"name,omitempty" comment:"optim.name from this step on, among adamw | nadamw | adamc (they share m, v and the step count, so the state carries over; Marin 32B: adamc in the decay); a swap to or from muon is a rewind or a branch (kestrel rewind --set optim.name)"`
}

// Knobs are the values of the schedulable knobs in force at one step.
type Knobs struct {
	MaxGradNorm    float64
	ClipUpdateNorm bool
	UpdateSigma    float64
	SkipSigma      float64
	ZLoss          float64
	QKClipTau      float64
	LRScale        float64
	Name           string // optim.name in force ("" = adamw)
}

// BaseKnobs are the knobs of c before any schedule entry, with zLoss the
// model's z-loss weight (model.z_loss).
func (c Config) BaseKnobs(zLoss float64) Knobs {
	return Knobs{MaxGradNorm: c.MaxGradNorm, ClipUpdateNorm: c.ClipUpdateNorm, UpdateSigma: c.UpdateSigma,
		SkipSigma: c.SkipSigma, ZLoss: zLoss, QKClipTau: c.QKClipTau, LRScale: 1, Name: c.Name}
}

// KnobsAt returns the knobs in force at the 1-based step s: BaseKnobs
// overlaid with every schedule entry whose Step is at most s, in order.
func (c Config) KnobsAt(s int, zLoss float64) Knobs {
	k := c.BaseKnobs(zLoss)
	for _, e := range c.Knobs {
		if e.Step > s {
			break
		}
		set(&k.MaxGradNorm, e.MaxGradNorm)
		if e.ClipUpdateNorm != nil {
			k.ClipUpdateNorm = *e.ClipUpdateNorm
		}
		set(&k.UpdateSigma, e.UpdateSigma)
		set(&k.SkipSigma, e.SkipSigma)
		set(&k.ZLoss, e.ZLoss)
		set(&k.QKClipTau, e.QKClipTau)
		set(&k.LRScale, e.LRScale)
		if e.Name != nil {
			k.Name = *e.Name
		}
	}
	return k
}

func set(dst *float64, v *float64) {
	if v != nil {
		*dst = *v
	}
}

// UsesQKClip reports whether QK-Clip is on at any step (the base
// optim.qk_clip_tau or a schedule entry's).
func (c Config) UsesQKClip() bool {
	if c.QKClipTau > 0 {
		return true
	}
	for _, e := range c.Knobs {
		if e.QKClipTau != nil && *e.QKClipTau > 0 {
			return true
		}
	}
	return false
}

// validateKnobs checks the schedule, naming each bad field as
// optim.knobs[i].key.
func (c Config) validateKnobs() error {
	var errs []error
	bad := func(i int, key, f string, args ...any) {
		errs = append(errs, fmt.Errorf("optim.knobs[%d].%s "+f, append([]any{i, key}, args...)...))
	}
	nonNeg := func(i int, key string, v *float64) {
		if v != nil && (!(*v >= 0) || math.IsInf(*v, 0)) {
			bad(i, key, "must be a finite number >= 0, got %g", *v)
		}
	}
	pos := func(i int, key string, v *float64) {
		if v != nil && (!(*v > 0) || math.IsInf(*v, 0)) {
			bad(i, key, "must be a finite number > 0, got %g", *v)
		}
	}
	clipOn, skipOn := c.ClipUpdateNorm, c.SkipBadSteps
	for i, e := range c.Knobs {
		if e.Step < 1 {
			bad(i, "step", "must be >= 1 (a metrics step), got %d", e.Step)
		} else if i > 0 && e.Step <= c.Knobs[i-1].Step {
			bad(i, "step", "must be after optim.knobs[%d].step (%d), got %d: entries are in increasing step order", i-1, c.Knobs[i-1].Step, e.Step)
		}
		nonNeg(i, "max_grad_norm", e.MaxGradNorm)
		pos(i, "update_clip_sigma", e.UpdateSigma)
		pos(i, "skip_sigma", e.SkipSigma)
		nonNeg(i, "z_loss", e.ZLoss)
		nonNeg(i, "qk_clip_tau", e.QKClipTau)
		pos(i, "lr_scale", e.LRScale)
		if e.ClipUpdateNorm != nil && *e.ClipUpdateNorm {
			clipOn = true
		}
		if e.SkipSigma != nil && !skipOn {
			bad(i, "skip_sigma", "is set but optim.skip_bad_steps is false: it would change nothing")
		}
		if e.Name != nil {
			switch {
			case c.Name == "muon":
				bad(i, "name", "= %q: optim.name is muon; a swap from Muon is a rewind or a branch (kestrel rewind --set optim.name)", *e.Name)
			case *e.Name != "adamw" && *e.Name != "nadamw" && *e.Name != "adamc":
				bad(i, "name", "= %q: want adamw, nadamw or adamc (a swap to muon is a rewind or a branch: kestrel rewind --set optim.name=muon)", *e.Name)
			}
		}
		if e.MaxGradNorm == nil && e.ClipUpdateNorm == nil && e.UpdateSigma == nil && e.SkipSigma == nil &&
			e.ZLoss == nil && e.QKClipTau == nil && e.LRScale == nil && e.Name == nil {
			bad(i, "step", "(%d): the entry sets no knob (max_grad_norm, clip_update_norm, update_clip_sigma, skip_sigma, z_loss, qk_clip_tau, lr_scale, name)", e.Step)
		}
	}
	if clipOn && !c.ClipUpdateNorm && (c.UpdateSigma <= 0 || c.UpdateWindow < 2 || c.UpdateMinSteps < 2 || c.UpdateMinSteps > c.UpdateWindow) {
		errs = append(errs, errors.New("optim.knobs turns clip_update_norm on: optim.update_clip_sigma must be > 0 and 2 <= optim.update_clip_min_steps <= optim.update_clip_window"))
	}
	return errors.Join(errs...)
}

// SetKnobs sets the optimizer's knobs for the coming steps (see KnobsAt):
// max_grad_norm, update clipping on/off and its σ, the skip-step σ and the
// optimizer among adamw, nadamw and adamc (validateKnobs keeps Muon out).
// The other fields of k are the trainer's (z-loss, QK-Clip τ, LR scale).
func (o *AdamW) SetKnobs(k Knobs) {
	o.cfg.MaxGradNorm, o.cfg.ClipUpdateNorm, o.cfg.UpdateSigma, o.cfg.SkipSigma = k.MaxGradNorm, k.ClipUpdateNorm, k.UpdateSigma, k.SkipSigma
	if o.muon == nil && k.Name != "muon" {
		o.cfg.Name = k.Name
	}
}

// Name is the optimizer in force (optim.name, or the knob's): "adamw" (or
// "", a Config literal's AdamW), "nadamw", "adamc" or "muon".
func (o *AdamW) Name() string { return o.cfg.Name }
