package monitor

import (
	"encoding/json"
	"os"
	"testing"
)

// healthyRuns replays the per-step records of two shipped healthy runs
// (testdata/healthy_runs.json: configs/shakespeare-char.toml, 2,000 steps,
// and `kestrel demo --quick`, 200 steps through its data stage at step
// 161): train_loss_raw, learning_rate, lr_cycle and the batch vitals.
func healthyRuns(t *testing.T) map[string][]map[string]float64 {
	t.Helper()
	b, err := os.ReadFile("testdata/healthy_runs.json")
	if err != nil {
		t.Fatal(err)
	}
	var runs map[string]struct {
		Columns []string     `json:"columns"`
		Rows    [][]*float64 `json:"rows"`
	}
	if err := json.Unmarshal(b, &runs); err != nil {
		t.Fatalf("testdata/healthy_runs.json: %v", err)
	}
	out := map[string][]map[string]float64{}
	for name, r := range runs {
		out[name] = rowValues(r.Columns, r.Rows)
	}
	return out
}

// rowValues turns the rows of a testdata table (null: absent) into one
// map of values per row.
func rowValues(columns []string, rows [][]*float64) []map[string]float64 {
	out := make([]map[string]float64, 0, len(rows))
	for _, row := range rows {
		v := map[string]float64{}
		for i, c := range columns {
			if row[i] != nil {
				v[c] = *row[i]
			}
		}
		out = append(out, v)
	}
	return out
}

// TestHealthyRunsQuiet: the batch rules and the spike rules (with their
// planned-change re-basing) raise nothing on the shipped healthy runs.
func TestHealthyRunsQuiet(t *testing.T) {
	runs := healthyRuns(t)
	opts := map[string]Options{
		"shakespeare-char": {Vocab: 256},
		"demo-quick": {Vocab: 8192, MixStages: []MixStage{
			{StartStep: 1, Weights: map[string]float64{"books": 0.2, "wiki": 0.25, "web": 0.05, "math": 0.25, "code": 0.25}},
			{StartStep: 161, Weights: map[string]float64{"books": 0.3, "wiki": 0.3, "web": 0.05, "math": 0.3, "code": 0.05}}}},
	}
	for name, steps := range runs {
		t.Run(name, func(t *testing.T) {
			if len(steps) < 200 {
				t.Fatalf("%d steps", len(steps))
			}
			m := newOptsMonitor(t, quietConfig(), opts[name])
			for _, v := range steps {
				step := int64(v["step"])
				delete(v, "step")
				for _, a := range m.Observe(Sample{Step: step, Values: v}) {
					switch a.Rule {
					case RuleGarbageBatch, RuleBatchAnomaly, RuleLossSpike, RuleSpikeCluster:
						t.Errorf("%s at step %d: %s", a.Rule, a.Step, a.Message)
					}
				}
			}
		})
	}
}
