package monitor

import (
	"strings"
	"testing"
)

func TestStragglerRule(t *testing.T) {
	tests := []struct {
		name   string
		ratios []float64
		ranks  []int
		fire   bool
	}{
		{"balanced", []float64{1.1, 1.2, 1.0, 1.1, 1.2}, []int{1, 1, 1, 1, 1}, false},
		{"slow rank 1", []float64{2, 2, 2, 2, 2}, []int{1, 1, 1, 1, 1}, true},
		{"too short", []float64{2, 2, 2, 1, 2}, []int{1, 1, 1, 1, 1}, false},
		{"slowest changes", []float64{2, 2, 2, 2, 2}, []int{1, 0, 1, 0, 1}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.StragglerSteps = 5
			r := newRules(cfg, nil, 0, 0)
			r.dist.hosts = []string{"node-a", "node-b"}
			var got []Alert
			for i, x := range tt.ratios {
				s := &Sample{Step: int64(i + 1), Values: map[string]float64{"straggler_ratio": x, "straggler_rank": float64(tt.ranks[i]), "rank_step_time/rank1": 0.5}}
				r.dist.observe(s, &got)
			}
			if (len(got) > 0) != tt.fire {
				t.Fatalf("alerts %v, want fired=%v", got, tt.fire)
			}
			if tt.fire {
				a := got[0]
				if a.Severity != SEV1 || a.Rule != RuleStraggler || !strings.Contains(a.Message, "rank 1 on node-b") {
					t.Errorf("alert %+v", a)
				}
			}
		})
	}
}

func TestRankHangAlert(t *testing.T) {
	cfg := DefaultConfig()
	cfg.SQLite, cfg.TensorBoard, cfg.TraceSteps = false, false, 0
	m, err := New(cfg, Options{RunDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	m.SetRankHosts([]string{"node-a", "node-b", "node-c"})
	as := m.RankHang(7, "allreduce_f32", []int{2}, nil, 0)
	if len(as) != 1 || as[0].Severity != SEV0 || !strings.Contains(as[0].Message, "rank 2 on node-c") {
		t.Fatalf("alerts %+v", as)
	}
}
