package monitor

import (
	"math"
	"testing"
)

// TestOffTrackRule: SEV2 off_track fires after off_track_steps judged
// steps above the fit beyond noise, and stays quiet on a run on its fit,
// on a short excursion, below the fit (a cooldown) and when a stretch is
// broken by steps that are not judged (a re-warm-up).
func TestOffTrackRule(t *testing.T) {
	type reading struct{ res, z float64 } // NaN = not judged (absent)
	const n = 300
	series := func(f func(s int) reading) []reading {
		out := make([]reading, n)
		for s := range out {
			out[s] = f(s + 1)
		}
		return out
	}
	cfg := DefaultConfig() // off_track_z 4, off_track_steps 50, off_track_min 0.02
	for _, tc := range []struct {
		name   string
		rs     []reading
		fireAt int64 // 0 = must stay quiet
	}{
		{"on its fit", series(func(s int) reading { return reading{0.005 * math.Sin(float64(s)), 1.5 * math.Sin(float64(s)/7)} }), 0},
		{"off from step 100", series(func(s int) reading {
			if s >= 100 {
				return reading{0.1, 9}
			}
			return reading{0, 0.5}
		}), 149},
		{"excursion of 40 steps", series(func(s int) reading {
			if s >= 100 && s < 140 {
				return reading{0.1, 9}
			}
			return reading{0, 0.5}
		}), 0},
		{"below the fit (cooldown)", series(func(s int) reading { return reading{-0.2, -30} }), 0},
		{"beyond noise but negligible", series(func(s int) reading { return reading{0.01, 8} }), 0},
		{"within noise", series(func(s int) reading { return reading{0.05, 3} }), 0},
		{"broken by a re-warm-up", series(func(s int) reading {
			switch {
			case s%40 < 5: // stretches of 35 judged steps
				return reading{math.NaN(), math.NaN()}
			}
			return reading{0.1, 9}
		}), 0},
		{"warm-up, then off", series(func(s int) reading {
			if s < 50 {
				return reading{math.NaN(), math.NaN()}
			}
			return reading{0.1, 9}
		}), 99},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRules(cfg, nil, 256, 0)
			var first int64
			for i, rd := range tc.rs {
				s := Sample{Step: int64(i + 1), Tokens: int64(768 * (i + 1)), Values: map[string]float64{"train_loss_raw": 2}}
				if !math.IsNaN(rd.res) {
					s.Values["scaling_law_residual"], s.Values["scaling_law_residual_z"] = rd.res, rd.z
					s.Values["loss_fit"], s.Values["loss_projection_final"], s.Values["loss_projection_se"] = 1.9, 1.6, 0.01
				}
				for _, a := range r.check(&s) {
					if a.Rule != RuleOffTrack {
						continue
					}
					if a.Severity != SEV2 || a.Metric != "scaling_law_residual" {
						t.Errorf("alert %+v, want SEV2 on scaling_law_residual", a)
					}
					if first == 0 {
						first = a.Step
					}
				}
			}
			if first != tc.fireAt {
				t.Errorf("off_track first fired at step %d, want %d (0 = never)", first, tc.fireAt)
			}
		})
	}
}

func TestOffTrackConfig(t *testing.T) {
	for _, mod := range []func(*Config){
		func(c *Config) { c.OffTrackSteps = -1 },
		func(c *Config) { c.OffTrackZ = 0 },
		func(c *Config) { c.OffTrackZ = math.Inf(1) },
		func(c *Config) { c.OffTrackMin = math.NaN() },
	} {
		c := DefaultConfig()
		mod(&c)
		if err := c.Validate(); err == nil {
			t.Errorf("config %+v validated", c)
		}
	}
	c := DefaultConfig()
	c.OffTrackSteps = 0 // off
	r := newRules(c, nil, 256, 0)
	for i := 1; i <= 200; i++ {
		s := Sample{Step: int64(i), Values: map[string]float64{"scaling_law_residual": 1, "scaling_law_residual_z": 100}}
		for _, a := range r.check(&s) {
			if a.Rule == RuleOffTrack {
				t.Fatalf("off_track_steps = 0 fired %+v", a)
			}
		}
	}
}
