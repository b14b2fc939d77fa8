package stepvitals

import (
	"fmt"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/model"
	"github.com/kestrel-lm/kestrel/internal/optim"
	"github.com/kestrel-lm/kestrel/internal/runlog"
)

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
		if got := LayerGroup(name); got != want {
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
	FillOptimNorms(m, optim.Result{AdamMNorm: 2, AdamVNorm: 3}, spans, sq)
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
	FillOptimNorms(&bare, optim.Result{}, spans, sq)
	if bare.PerLayer["update_norm/layer0"] != 4 {
		t.Errorf("without vitals: %v", bare.PerLayer)
	}
}

// TestPackExtremes: the vitals ranks reduce by their maximum go out in one
// order, the attention entropies negated, and come back where they were.
func TestPackExtremes(t *testing.T) {
	v := &model.Vitals{MaxAttnLogit: [][]float32{{1, 2}}, AttnEntropy: [][]float32{{0.5, 0.25}},
		ResidualRMS: []float32{3}, ActivationOutlierRate: []float32{0.125}}
	xs := PackExtremes(v)
	if want := []float64{1, 2, -0.5, -0.25, 3, 0.125}; fmt.Sprint(xs) != fmt.Sprint(want) {
		t.Fatalf("packed %v, want %v", xs, want)
	}
	for i := range xs {
		xs[i] += 1 // what a max over ranks might return
	}
	UnpackExtremes(v, xs)
	if v.MaxAttnLogit[0][1] != 3 || v.AttnEntropy[0][0] != -0.5 || v.AttnEntropy[0][1] != -0.75 || v.ResidualRMS[0] != 4 || v.ActivationOutlierRate[0] != 1.125 {
		t.Errorf("unpacked %+v", v)
	}
}
