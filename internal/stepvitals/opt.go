package stepvitals

import (
	"fmt"
	"math"
	"strings"

	"github.com/kestrel-lm/kestrel/internal/model"
	"github.com/kestrel-lm/kestrel/internal/optim"
	"github.com/kestrel-lm/kestrel/internal/runlog"
)

// FillOpt sets lm_head_norm (the L2 norm of lm_head.weight before
// the update, or of the token embedding when the embeddings are tied; left
// out of a skipped step, whose sums the optimizer does not take) and
// opt_state_finite: whether every Adam moment is finite, read from the
// moment norms the optimizer takes anyway (a sum of squares in float64 is
// finite exactly when every moment is), so the check costs nothing.
func FillOpt(m *runlog.Step, spans []optim.Span, sq []optim.SpanSquares, tied bool) {
	head := "lm_head.weight"
	if tied {
		head = "model.embed_tokens.weight"
	}
	if len(sq) == len(spans) {
		for i, s := range spans {
			if s.Name == head && sq[i].Param > 0 {
				m.Vitals.LMHeadNorm = math.Sqrt(sq[i].Param)
			}
		}
	}
	ok := !math.IsNaN(m.AdamMNorm) && !math.IsInf(m.AdamMNorm, 0) && !math.IsNaN(m.AdamVNorm) && !math.IsInf(m.AdamVNorm, 0)
	m.Vitals.OptStateFinite = &ok
}

// FillOptimNorms records the global Adam moment norms and, per layer group
// (see LayerGroup), update_norm, param_norm, adam_m_norm and adam_v_norm
// from the optimizer's per-tensor sums of squares.
func FillOptimNorms(m *runlog.Step, r optim.Result, spans []optim.Span, sq []optim.SpanSquares) {
	m.AdamMNorm, m.AdamVNorm = r.AdamMNorm, r.AdamVNorm
	if len(sq) != len(spans) {
		return
	}
	groups := map[string]*optim.SpanSquares{}
	for i, s := range spans {
		g := LayerGroup(s.Name)
		if g == "" {
			continue
		}
		a := groups[g]
		if a == nil {
			a = &optim.SpanSquares{}
			groups[g] = a
		}
		a.Update += sq[i].Update
		a.Param += sq[i].Param
		a.M += sq[i].M
		a.V += sq[i].V
	}
	if m.PerLayer == nil {
		m.PerLayer = make(map[string]float64, 4*len(groups))
	}
	for g, a := range groups {
		m.PerLayer["update_norm/"+g] = math.Sqrt(a.Update)
		m.PerLayer["param_norm/"+g] = math.Sqrt(a.Param)
		m.PerLayer["adam_m_norm/"+g] = math.Sqrt(a.M)
		m.PerLayer["adam_v_norm/"+g] = math.Sqrt(a.V)
	}
}

// LayerGroup names the layer a tensor belongs to in the per-layer
// optimizer norms: "embed" for the token embedding, "layerL" for
// model.layers.L.*, "lm_head" for the final norm and the output projection
// (with tied embeddings only the final norm), "" for anything else.
func LayerGroup(name string) string {
	switch {
	case strings.HasPrefix(name, "model.embed_tokens."):
		return "embed"
	case strings.HasPrefix(name, "model.layers."):
		rest := name[len("model.layers."):]
		i := strings.IndexByte(rest, '.')
		if i <= 0 || strings.Trim(rest[:i], "0123456789") != "" {
			return ""
		}
		return "layer" + rest[:i]
	case strings.HasPrefix(name, "model.norm."), strings.HasPrefix(name, "lm_head."):
		return "lm_head"
	}
	return ""
}

// FillModel records the model's vitals of the step (per head and layer in
// PerLayer, which it starts afresh; the worst over them in m) and the MoE
// routing vitals.
func FillModel(m *runlog.Step, v *model.Vitals) {
	m.PerLayer = map[string]float64{}
	m.MaxAttnLogit, m.AttnEntropy = math.Inf(-1), math.Inf(1)
	for l, heads := range v.MaxAttnLogit {
		for h, x := range heads {
			m.MaxAttnLogit = math.Max(m.MaxAttnLogit, float64(x))
			m.PerLayer[fmt.Sprintf("max_attn_logit/layer%d/head%d", l, h)] = float64(x)
		}
	}
	for l, heads := range v.AttnEntropy {
		for h, x := range heads {
			m.AttnEntropy = math.Min(m.AttnEntropy, float64(x))
			m.PerLayer[fmt.Sprintf("attn_entropy/layer%d/head%d", l, h)] = float64(x)
		}
	}
	for l, x := range v.ResidualRMS {
		m.ResidualRMS = math.Max(m.ResidualRMS, float64(x))
		m.PerLayer[fmt.Sprintf("residual_rms/layer%d", l)] = float64(x)
	}
	for l, x := range v.ActivationOutlierRate {
		m.ActivationOutlierRate = math.Max(m.ActivationOutlierRate, float64(x))
		m.PerLayer[fmt.Sprintf("activation_outlier_rate/layer%d", l)] = float64(x)
	}
	if math.IsInf(m.MaxAttnLogit, 0) {
		m.MaxAttnLogit = 0
	}
	if math.IsInf(m.AttnEntropy, 0) {
		m.AttnEntropy = 0
	}
	m.LogitLSEMean = float64(v.LogitLSEMean)
	fillMoE(m, v)
}

// fillMoE records the MoE layers' routing vitals (over the step's
// micro-batches) on m: per layer in PerLayer, worst over layers in m.MoE.
// Dense models leave m.MoE nil.
func fillMoE(m *runlog.Step, v *model.Vitals) {
	if len(v.MoE) == 0 {
		return
	}
	if m.PerLayer == nil {
		m.PerLayer = map[string]float64{}
	}
	s := &runlog.MoEStep{UtilEntropy: math.Inf(1), TokensMin: math.Inf(1)}
	for _, x := range v.MoE {
		l := fmt.Sprintf("/layer%d", x.Layer)
		for name, val := range map[string]float64{
			"moe_load_balance_loss": float64(x.LoadBalanceLoss), "moe_util_entropy": float64(x.UtilEntropy),
			"moe_tokens_per_expert_min": float64(x.TokensMin), "moe_tokens_per_expert_max": float64(x.TokensMax),
			"moe_tokens_per_expert_std": float64(x.TokensStd), "moe_dead_experts": float64(x.DeadExperts),
			"moe_drop_rate": float64(x.DropRate),
		} {
			m.PerLayer[name+l] = val
		}
		s.LoadBalanceLoss = math.Max(s.LoadBalanceLoss, float64(x.LoadBalanceLoss))
		s.UtilEntropy = math.Min(s.UtilEntropy, float64(x.UtilEntropy))
		s.TokensMin = math.Min(s.TokensMin, float64(x.TokensMin))
		s.TokensMax = math.Max(s.TokensMax, float64(x.TokensMax))
		s.TokensStd = math.Max(s.TokensStd, float64(x.TokensStd))
		s.DeadExperts += x.DeadExperts
		s.DropRate = math.Max(s.DropRate, float64(x.DropRate))
	}
	m.MoE = s
}

// walkExtremes visits the model vitals that are reduced over data-parallel
// ranks by their maximum: max attention logits, residual RMS and outlier
// rates, and the attention entropies negated (their minimum is the worst).
func walkExtremes(v *model.Vitals, f func(x *float32, neg bool)) {
	for _, hs := range v.MaxAttnLogit {
		for h := range hs {
			f(&hs[h], false)
		}
	}
	for _, hs := range v.AttnEntropy {
		for h := range hs {
			f(&hs[h], true)
		}
	}
	for i := range v.ResidualRMS {
		f(&v.ResidualRMS[i], false)
	}
	for i := range v.ActivationOutlierRate {
		f(&v.ActivationOutlierRate[i], false)
	}
}

// PackExtremes lists v's vitals that ranks reduce by their maximum (the
// attention entropies negated), for one all-reduce.
func PackExtremes(v *model.Vitals) []float64 {
	var xs []float64
	walkExtremes(v, func(x *float32, neg bool) {
		if neg {
			xs = append(xs, -float64(*x))
		} else {
			xs = append(xs, float64(*x))
		}
	})
	return xs
}

// UnpackExtremes writes the reduced xs (PackExtremes' order) back into v.
func UnpackExtremes(v *model.Vitals, xs []float64) {
	i := 0
	walkExtremes(v, func(x *float32, neg bool) {
		if neg {
			*x = float32(-xs[i])
		} else {
			*x = float32(xs[i])
		}
		i++
	})
}
