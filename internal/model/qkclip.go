package model

import (
	"fmt"
	"math"
	"strconv"
)

// QKClip is Kimi K2's QK-Clip (the MuonClip paper's per-head weight
// rescaling), applied after an optimizer step: every attention head whose
// max pre-softmax logit S_max = max s·q·k (s = 1/√head_dim, the
// max_attn_logit vital) exceeded τ on the step's forward passes has its
// query and key weights rescaled so that the same inputs give a logit of
// at most τ. With η = τ/S_max < 1 (the logit is bilinear in W_q and W_k,
// so scaling them by a and b scales it by a·b):
//
//   - no QK-Norm, key head not shared (n_kv_heads = n_heads): the head's
//     rows of q_proj and of k_proj are each scaled by √η (the paper's
//     balanced split);
//   - no QK-Norm, grouped-query attention (n_kv_heads < n_heads): the key
//     head is shared by n_heads/n_kv_heads query heads, and scaling it
//     would shrink heads that did not exceed τ, so only the clipped query
//     head's rows of q_proj are scaled, by η;
//   - QK-Norm on: q and k are RMS-normalised per head before the product,
//     so scaling q_proj/k_proj would change nothing; the bound is set by
//     the q_norm and k_norm gains, which one layer's heads share. The
//     layer's gains are each scaled by √η_min, η_min the smallest η over
//     its clipped heads: every head of that layer then has its logits
//     scaled by η_min (heads under τ shrink with it).
//
// RoPE is a per-head rotation applied after the projection (and after the
// norm), so it commutes with these scalings. Heads whose S_max is not
// finite are left alone (the NaN guard stops such a run). The optimizer
// moments and the weight EMA are not touched: the EMA follows the clipped
// weights through its next updates.
type QKClip struct {
	hd, nh, nkv int
	qkNorm      bool
	layers      []qkLayer
}

// qkLayer holds the offsets of one block's q_proj, k_proj (rows of D
// floats, head h at rows h·hd…) or q_norm, k_norm gains in the flat
// parameter buffer.
type qkLayer struct {
	q, k  int // offsets of q_proj and k_proj (or q_norm and k_norm with QK-Norm)
	d     int // row length of the projections (d_model)
	etas  []float64
	flags []bool
}

// NewQKClip resolves the tensors of cfg's attention projections (or QK-Norm
// gains) in ts, a layout such as Model.Tensors returns.
func NewQKClip(cfg Config, ts []Tensor) (*QKClip, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("qk-clip: %w", err)
	}
	hd, _, _ := cfg.dims()
	c := &QKClip{hd: hd, nh: cfg.NHeads, nkv: cfg.NKVHeads, qkNorm: cfg.QKNorm}
	byName := make(map[string]Tensor, len(ts))
	for _, t := range ts {
		byName[t.Name] = t
	}
	find := func(name string, size int) (int, error) {
		t, ok := byName[name]
		if !ok {
			return 0, fmt.Errorf("qk-clip: the model has no tensor %s", name)
		}
		if t.Size != size {
			return 0, fmt.Errorf("qk-clip: tensor %s has %d values, want %d", name, t.Size, size)
		}
		return t.Offset, nil
	}
	for l := 0; l < cfg.NLayers; l++ {
		p := "model.layers." + strconv.Itoa(l) + ".self_attn."
		ly := qkLayer{d: cfg.DModel, etas: make([]float64, cfg.NHeads), flags: make([]bool, cfg.NHeads)}
		var err error
		if cfg.QKNorm {
			if ly.q, err = find(p+"q_norm.weight", hd); err != nil {
				return nil, err
			}
			if ly.k, err = find(p+"k_norm.weight", hd); err != nil {
				return nil, err
			}
		} else {
			if ly.q, err = find(p+"q_proj.weight", cfg.NHeads*hd*cfg.DModel); err != nil {
				return nil, err
			}
			if ly.k, err = find(p+"k_proj.weight", cfg.NKVHeads*hd*cfg.DModel); err != nil {
				return nil, err
			}
		}
		c.layers = append(c.layers, ly)
	}
	return c, nil
}

// Apply rescales params for every head whose maxLogit[layer][head] exceeds
// tau (see QKClip) and returns the number of heads clipped. tau <= 0 does
// nothing. maxLogit must have the model's layers and heads (Vitals'
// MaxAttnLogit shape).
func (c *QKClip) Apply(params []float32, maxLogit [][]float32, tau float64) (int, error) {
	if tau <= 0 {
		return 0, nil
	}
	if len(maxLogit) != len(c.layers) {
		return 0, fmt.Errorf("qk-clip: max logits for %d layers, the model has %d", len(maxLogit), len(c.layers))
	}
	clipped := 0
	for l := range c.layers {
		ly := &c.layers[l]
		if len(maxLogit[l]) != c.nh {
			return 0, fmt.Errorf("qk-clip: layer %d: max logits for %d heads, the model has %d", l, len(maxLogit[l]), c.nh)
		}
		etaMin, any := 1.0, false
		for h, s := range maxLogit[l] {
			x := float64(s)
			ly.flags[h] = x > tau && !math.IsInf(x, 0) && !math.IsNaN(x)
			ly.etas[h] = 1
			if ly.flags[h] {
				ly.etas[h] = tau / x
				etaMin = math.Min(etaMin, ly.etas[h])
				any = true
				clipped++
			}
		}
		if !any {
			continue
		}
		if c.qkNorm {
			f := float32(math.Sqrt(etaMin))
			scale(params[ly.q:ly.q+c.hd], f)
			scale(params[ly.k:ly.k+c.hd], f)
			continue
		}
		rows := c.hd * ly.d
		group := c.nh / c.nkv
		for h := 0; h < c.nh; h++ {
			if !ly.flags[h] {
				continue
			}
			q := params[ly.q+h*rows : ly.q+(h+1)*rows]
			if group > 1 {
				scale(q, float32(ly.etas[h]))
				continue
			}
			f := float32(math.Sqrt(ly.etas[h]))
			scale(q, f)
			scale(params[ly.k+h*rows:ly.k+(h+1)*rows], f)
		}
	}
	return clipped, nil
}

func scale(x []float32, f float32) {
	for i := range x {
		x[i] *= f
	}
}
