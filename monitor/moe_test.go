package monitor

import "testing"

func TestMoERules(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(s int64, v map[string]float64)
		want   map[string]int64 // rule → first step it fires
	}{
		{"balanced", func(int64, map[string]float64) {}, nil},
		{"transient drops", func(s int64, v map[string]float64) {
			if s >= 150 && s < 160 { // shorter than moe_sustain_steps
				v["moe_drop_rate"] = 0.05
				v["moe_dead_experts"] = 1
			}
		}, nil},
		{"sustained drops", func(s int64, v map[string]float64) {
			if s >= 150 {
				v["moe_drop_rate"] = 0.02
				v["moe_drop_rate/layer1"] = 0.02
			}
		}, map[string]int64{RuleMoEDrop: 169}},
		{"dead experts", func(s int64, v map[string]float64) {
			if s >= 100 {
				v["moe_dead_experts"] = 2
			}
		}, map[string]int64{RuleMoEDeadExpert: 119}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := newTestMonitor(t, testConfig(), t.TempDir())
			c := newCurve(3)
			got := map[string]int64{}
			for s := int64(1); s <= 300; s++ {
				smp := c.sample(s)
				smp.Values["moe_drop_rate"], smp.Values["moe_dead_experts"], smp.Values["moe_util_entropy"] = 0, 0, 0.98
				tc.mutate(s, smp.Values)
				for _, a := range m.Observe(smp) {
					if _, ok := got[a.Rule]; !ok {
						got[a.Rule] = s
					}
					if (a.Rule == RuleMoEDrop || a.Rule == RuleMoEDeadExpert) && a.Severity != SEV1 {
						t.Errorf("%s severity %s", a.Rule, a.Severity)
					}
				}
			}
			if len(got) != len(tc.want) {
				t.Fatalf("fired %v, want %v", got, tc.want)
			}
			for r, s := range tc.want {
				if got[r] != s {
					t.Errorf("%s first fired at %d, want %d (all: %v)", r, got[r], s, got)
				}
			}
			if _, ok := RunbookFor(RuleMoEDrop); !ok {
				t.Error("no runbook for", RuleMoEDrop)
			}
		})
	}
}
