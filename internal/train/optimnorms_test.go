package train

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"testing"
)

// TestPerLayerOptimizerNorms: every step line carries update_norm,
// param_norm, adam_m_norm and adam_v_norm for embed, each layer and
// lm_head, and their squares add up to the global values.
func TestPerLayerOptimizerNorms(t *testing.T) {
	for _, tied := range []bool{false, true} {
		t.Run(fmt.Sprintf("tied=%v", tied), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "run")
			o := baseOpts(dir)
			o.Model.NLayers, o.Model.Tied = 2, tied
			o.Train.Steps = 5
			if _, err := Run(context.Background(), o); err != nil {
				t.Fatal(err)
			}
			lines := readLines(t, dir)
			if len(lines) != 5 {
				t.Fatalf("%d step lines", len(lines))
			}
			num := func(l map[string]json.RawMessage, k string) float64 {
				raw, ok := l[k]
				if !ok {
					t.Fatalf("step line lacks %q", k)
				}
				var v float64
				if err := json.Unmarshal(raw, &v); err != nil {
					t.Fatalf("%s: %v", k, err)
				}
				return v
			}
			for i, l := range lines {
				for _, base := range []string{"update_norm", "param_norm", "adam_m_norm", "adam_v_norm"} {
					global := num(l, base)
					var sum float64
					for _, g := range []string{"embed", "layer0", "layer1", "lm_head"} {
						x := num(l, base+"/"+g)
						if x <= 0 && base != "adam_v_norm" {
							t.Errorf("step %d %s/%s = %g", i+1, base, g, x)
						}
						sum += x * x
					}
					if global <= 0 || math.Abs(math.Sqrt(sum)-global) > 1e-9*global {
						t.Errorf("step %d %s: per-layer total %.17g, global %.17g", i+1, base, math.Sqrt(sum), global)
					}
				}
				if _, ok := l["update_norm/layer2"]; ok {
					t.Errorf("step %d: a third layer", i+1)
				}
			}
		})
	}
}
