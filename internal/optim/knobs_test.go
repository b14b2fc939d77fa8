package optim

import (
	"math"
	"strings"
	"testing"
)

func fp(v float64) *float64 { return &v }
func bp(v bool) *bool       { return &v }
func sp(v string) *string   { return &v }

// TestKnobsAt: later entries override earlier ones from their step on;
// knobs an entry leaves unset keep their value; no schedule is the config.
func TestKnobsAt(t *testing.T) {
	c := DefaultConfig()
	base := c.BaseKnobs(1e-4)
	if got := c.KnobsAt(1000, 1e-4); got != base {
		t.Fatalf("no schedule: %+v, want %+v", got, base)
	}
	c.Knobs = []KnobStep{
		{Step: 10, MaxGradNorm: fp(0.2)},
		{Step: 20, ClipUpdateNorm: bp(false), LRScale: fp(0.5)},
		{Step: 30, MaxGradNorm: fp(0.5), QKClipTau: fp(100), ZLoss: fp(0)},
		{Step: 40, Name: sp("adamc")},
	}
	tests := []struct {
		step int
		want Knobs
	}{
		{1, base},
		{9, base},
		{10, Knobs{MaxGradNorm: 0.2, ClipUpdateNorm: true, UpdateSigma: 2, SkipSigma: 6, ZLoss: 1e-4, LRScale: 1, Name: "adamw"}},
		{25, Knobs{MaxGradNorm: 0.2, ClipUpdateNorm: false, UpdateSigma: 2, SkipSigma: 6, ZLoss: 1e-4, LRScale: 0.5, Name: "adamw"}},
		{30, Knobs{MaxGradNorm: 0.5, ClipUpdateNorm: false, UpdateSigma: 2, SkipSigma: 6, ZLoss: 0, QKClipTau: 100, LRScale: 0.5, Name: "adamw"}},
		{40, Knobs{MaxGradNorm: 0.5, ClipUpdateNorm: false, UpdateSigma: 2, SkipSigma: 6, ZLoss: 0, QKClipTau: 100, LRScale: 0.5, Name: "adamc"}},
	}
	for _, tt := range tests {
		if got := c.KnobsAt(tt.step, 1e-4); got != tt.want {
			t.Errorf("step %d: %+v, want %+v", tt.step, got, tt.want)
		}
	}
	if !c.UsesQKClip() || DefaultConfig().UsesQKClip() {
		t.Error("UsesQKClip")
	}
}

// TestKnobsValidate: a bad schedule is refused naming the entry and field.
func TestKnobsValidate(t *testing.T) {
	tests := []struct {
		name  string
		knobs []KnobStep
		mod   func(*Config)
		want  string // "" = valid
	}{
		{"ok", []KnobStep{{Step: 1, MaxGradNorm: fp(0)}, {Step: 56400, MaxGradNorm: fp(0.2)}, {Step: 72200, ClipUpdateNorm: bp(true), UpdateSigma: fp(3)}}, nil, ""},
		{"step 0", []KnobStep{{Step: 0, MaxGradNorm: fp(0.2)}}, nil, "optim.knobs[0].step must be >= 1"},
		{"adamc in the decay", []KnobStep{{Step: 800, Name: sp("adamc")}}, nil, ""},
		{"name muon", []KnobStep{{Step: 8, Name: sp("muon")}}, nil, `optim.knobs[0].name = "muon": want adamw, nadamw or adamc`},
		{"name unknown", []KnobStep{{Step: 8, Name: sp("lion")}}, nil, `optim.knobs[0].name = "lion"`},
		{"from muon", []KnobStep{{Step: 8, Name: sp("adamw")}}, func(c *Config) { c.Name = "muon" }, "optim.knobs[0].name = \"adamw\": optim.name is muon"},
		{"not increasing", []KnobStep{{Step: 10, MaxGradNorm: fp(0.2)}, {Step: 10, LRScale: fp(2)}}, nil, "optim.knobs[1].step must be after optim.knobs[0].step (10)"},
		{"decreasing", []KnobStep{{Step: 10, MaxGradNorm: fp(0.2)}, {Step: 5, LRScale: fp(2)}}, nil, "optim.knobs[1].step must be after"},
		{"nan", []KnobStep{{Step: 3, MaxGradNorm: fp(math.NaN())}}, nil, "optim.knobs[0].max_grad_norm must be a finite number >= 0, got NaN"},
		{"inf tau", []KnobStep{{Step: 3, QKClipTau: fp(math.Inf(1))}}, nil, "optim.knobs[0].qk_clip_tau must be a finite number >= 0"},
		{"negative z", []KnobStep{{Step: 3, ZLoss: fp(-1)}}, nil, "optim.knobs[0].z_loss must be a finite number >= 0"},
		{"zero lr scale", []KnobStep{{Step: 3, LRScale: fp(0)}}, nil, "optim.knobs[0].lr_scale must be a finite number > 0"},
		{"zero sigma", []KnobStep{{Step: 3, UpdateSigma: fp(0)}}, nil, "optim.knobs[0].update_clip_sigma must be a finite number > 0"},
		{"nan skip", []KnobStep{{Step: 3, SkipSigma: fp(math.NaN())}}, nil, "optim.knobs[0].skip_sigma must be a finite number > 0"},
		{"skip off", []KnobStep{{Step: 3, SkipSigma: fp(4)}}, func(c *Config) { c.SkipBadSteps = false }, "optim.knobs[0].skip_sigma is set but optim.skip_bad_steps is false"},
		{"empty entry", []KnobStep{{Step: 3}}, nil, "optim.knobs[0].step (3): the entry sets no knob"},
		{"clip on, bad window", []KnobStep{{Step: 3, ClipUpdateNorm: bp(true)}}, func(c *Config) { c.ClipUpdateNorm, c.UpdateMinSteps = false, 1 }, "optim.knobs turns clip_update_norm on"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := DefaultConfig()
			if tt.mod != nil {
				tt.mod(&c)
			}
			c.Knobs = tt.knobs
			err := c.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("got %v, want an error containing %q", err, tt.want)
			}
		})
	}
}
