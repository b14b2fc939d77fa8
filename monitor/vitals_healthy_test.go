package monitor

import (
	"encoding/json"
	"os"
	"testing"
)

// vitalRules are the rules of memrules.go and ckptrules.go.
var vitalRules = map[string]bool{RuleMemoryCreep: true, RuleOptStateNonFin: true, RuleCheckpointSize: true, RuleLMHeadGrowth: true, RuleCheckpointFailed: true}

// TestHealthyRunsVitalsQuiet: with the default config, the vitals rules
// raise nothing on shipped healthy runs replayed from
// testdata/healthy_vitals.json (kestrel train's own step records:
// learning_rate, lm_head_norm, rss_bytes, rss_file_bytes, opt_state_finite,
// and each checkpoint's size): configs/shakespeare-char.toml, 2,000 steps
// with a cosine decay to 10%, and `kestrel demo`, 500 steps of WSD (decay
// from step 400) stopped by train.max_minutes at step 152 and resumed, both
// on a 2-core machine shared with other runs.
func TestHealthyRunsVitalsQuiet(t *testing.T) {
	b, err := os.ReadFile("testdata/healthy_vitals.json")
	if err != nil {
		t.Fatal(err)
	}
	var runs map[string]struct {
		Columns     []string     `json:"columns"`
		Rows        [][]*float64 `json:"rows"`
		Checkpoints [][3]float64 `json:"checkpoints"` // step, checkpoint_size, checkpoint_ok
	}
	if err := json.Unmarshal(b, &runs); err != nil {
		t.Fatalf("testdata/healthy_vitals.json: %v", err)
	}
	for name, r := range runs {
		t.Run(name, func(t *testing.T) {
			c := DefaultConfig()
			c.SQLite, c.TensorBoard = false, false
			m, err := New(c, Options{RunDir: t.TempDir(), Logger: quietLogger()})
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			if len(r.Rows) < 200 || len(r.Checkpoints) < 2 {
				t.Fatalf("%d steps, %d checkpoints", len(r.Rows), len(r.Checkpoints))
			}
			ck := 0
			var got []Alert
			for _, v := range rowValues(r.Columns, r.Rows) {
				step := int64(v["step"])
				delete(v, "step")
				got = append(got, m.Observe(Sample{Step: step, Values: v})...)
				for ; ck < len(r.Checkpoints) && int64(r.Checkpoints[ck][0]) == step; ck++ {
					cv := map[string]float64{"checkpoint_size": r.Checkpoints[ck][1], "checkpoint_ok": r.Checkpoints[ck][2]}
					got = append(got, m.Record(Event{Kind: EventCheckpoint, Step: step, OK: true, Values: cv})...)
				}
			}
			for _, a := range got {
				if vitalRules[a.Rule] {
					t.Errorf("step %d: %s: %s", a.Step, a.Rule, a.Message)
				}
			}
		})
	}
}
