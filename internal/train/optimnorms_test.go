package train

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/optim"
	"github.com/kestrel-lm/kestrel/internal/runlog"
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

func TestLayerGroup(t *testing.T) {
	for name, want := range map[string]string{
		"model.embed_tokens.weight":               "embed",
		"model.layers.0.input_layernorm.weight":   "layer0",
		"model.layers.12.self_attn.q_proj.weight": "layer12",
		"model.layers.3.mlp.down_proj.weight":     "layer3",
		"model.norm.weight":                       "lm_head",
		"lm_head.weight":                          "lm_head",
		"model.layers.x.mlp.weight":               "",
		"model.layers.":                           "",
		"something.else":                          "",
	} {
		if got := layerGroup(name); got != want {
			t.Errorf("layerGroup(%q) = %q, want %q", name, got, want)
		}
	}
}

// TestFillOptimNormsKeepsVitals: the optimizer norms join the vitals in
// PerLayer, and a record without vitals still gets them.
func TestFillOptimNormsKeepsVitals(t *testing.T) {
	spans := []optim.Span{{Name: "model.embed_tokens.weight", Size: 2}, {Name: "model.layers.0.mlp.up_proj.weight", Offset: 2, Size: 2}}
	sq := []optim.SpanSquares{{Update: 9, Param: 16, M: 1, V: 4}, {Update: 16, Param: 9, M: 4, V: 1}}
	m := &runlog.Step{PerLayer: map[string]float64{"residual_rms/layer0": 1}}
	fillOptimNorms(m, optim.Result{AdamMNorm: 2, AdamVNorm: 3}, spans, sq)
	want := map[string]float64{"residual_rms/layer0": 1, "update_norm/embed": 3, "param_norm/embed": 4, "adam_m_norm/embed": 1, "adam_v_norm/embed": 2,
		"update_norm/layer0": 4, "param_norm/layer0": 3, "adam_m_norm/layer0": 2, "adam_v_norm/layer0": 1}
	if len(m.PerLayer) != len(want) || m.AdamMNorm != 2 || m.AdamVNorm != 3 {
		t.Errorf("got %v, adam %g %g", m.PerLayer, m.AdamMNorm, m.AdamVNorm)
	}
	for k, v := range want {
		if m.PerLayer[k] != v {
			t.Errorf("%s = %g, want %g", k, m.PerLayer[k], v)
		}
	}
	var bare runlog.Step
	fillOptimNorms(&bare, optim.Result{}, spans, sq)
	if bare.PerLayer["update_norm/layer0"] != 4 {
		t.Errorf("without vitals: %v", bare.PerLayer)
	}
}
