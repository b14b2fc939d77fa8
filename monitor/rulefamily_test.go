package monitor

import (
	"fmt"
	"slices"
	"testing"
)

// Every rule family must be judged somewhere: one that implements none of
// stepRule, evalRule and ckptRule would be built and never called.
func TestEveryRuleFamilyIsJudged(t *testing.T) {
	r := newRules(DefaultConfig(), nil, 256, 0)
	fams := r.families(0)
	for _, f := range fams {
		_, step := f.(stepRule)
		_, eval := f.(evalRule)
		_, ckpt := f.(ckptRule)
		if !step && !eval && !ckpt {
			t.Errorf("%T is judged on nothing", f)
		}
	}
	if n := len(r.steps) + len(r.evalRs) + len(r.ckptRs); n < len(fams) {
		t.Errorf("%d families, %d hooks registered", len(fams), n)
	}
}

// The alerts of one step come out in the order of the family list, and
// Seed's history reaches every family but the live-only ones.
func TestRuleFamiliesOrderAndSeeding(t *testing.T) {
	cfg := DefaultConfig()
	r := newRules(cfg, nil, 256, 0)
	s := Sample{Step: 1, Values: map[string]float64{
		"train_loss_raw": 1, "nan_inf_events": 2, "checkpoint_ok": 0, "max_attn_logit": 2000,
		"opt_state_finite": 0, "update_to_weight": 5,
	}}
	var got []string
	for _, a := range r.check(&s) {
		got = append(got, a.Rule)
	}
	want := []string{RuleNaNInf, RuleCheckpointFailed, RuleDivergence, RuleAttnLogitRunaway, RuleOptStateNonFin}
	if !slices.Equal(got, want) {
		t.Errorf("alerts of one step %v, want %v", got, want)
	}

	r = newRules(cfg, nil, 256, 0)
	r.seeding = true
	for i := int64(1); i <= int64(cfg.Window); i++ {
		s := Sample{Step: i, Values: map[string]float64{"tokens_per_sec": 1000, "straggler_ratio": 9, "straggler_rank": 1, "dataloader_stall_frac": 0.9}}
		if as := r.check(&s); len(as) > 0 {
			t.Fatalf("seeding fired %v", as)
		}
	}
	r.seeding = false
	for _, f := range r.steps {
		switch f := f.(type) {
		case *throughputRule:
			if f.tps.len() != 0 {
				t.Errorf("the throughput window learned %d seeded steps", f.tps.len())
			}
		case *stragglerRule:
			if f.run != 0 {
				t.Errorf("the straggler run counted %d seeded steps", f.run)
			}
		case *stallRule:
			if !f.window.full {
				t.Errorf("the stall window holds %d of %d seeded steps", f.window.len(), cfg.Window)
			}
		}
	}
	s = Sample{Step: int64(cfg.Window) + 1, Values: map[string]float64{"dataloader_stall_frac": 0.9}}
	if as := r.check(&s); len(as) != 1 || as[0].Rule != RuleStall {
		t.Errorf("first live step after a seeded stall: %v, want %s", fmt.Sprint(as), RuleStall)
	}
}
