package model

import "strconv"

// The parts of Grads that backward finishes one after another: the head
// (final norm, and lm_head when untied) first, then each layer from the
// last to the first, then the token embedding (with tied embeddings it
// holds lm_head's gradient too, so it is only final at the very end).
const (
	gradPartHead  = -1
	gradPartEmbed = -2
)

// gradsDone tells GradsReady which flat range of Grads is final for this
// backward pass: part is a layer index, gradPartHead or gradPartEmbed.
func (m *Model) gradsDone(part int) {
	if m.GradsReady == nil {
		return
	}
	lo, hi := m.GradRange(part)
	if hi > lo {
		m.GradsReady(lo, hi)
	}
}

// GradRange is the flat range [lo, hi) of the parameters of one part of
// the model: a layer index in [0, n_layers), −1 for the head (model.norm
// and, when untied, lm_head), −2 for the token embedding.
func (m *Model) GradRange(part int) (lo, hi int) {
	var first, last string
	switch {
	case part == gradPartHead:
		first, last = "model.norm.weight", "lm_head.weight"
		if m.Cfg.Tied {
			last = first
		}
	case part == gradPartEmbed:
		first, last = "model.embed_tokens.weight", "model.embed_tokens.weight"
	case part >= 0 && part < m.Cfg.NLayers:
		p := "model.layers." + strconv.Itoa(part) + "."
		first, last = p+"input_layernorm.weight", p+"mlp.down_proj.weight"
	default:
		return 0, 0
	}
	a := m.tensors[m.byName[first]]
	b := m.tensors[m.byName[last]]
	return a.Offset, b.Offset + b.Size
}

// gradBeta is the beta of this pass's weight-gradient GEMMs: 0 on the
// first pass after StartAccumulation (each writer writes its gradient,
// reading nothing of the previous step), 1 otherwise (it adds). Every
// other writer of Grads follows m.gw the same way.
func (m *Model) gradBeta() float32 {
	if m.gw {
		return 0
	}
	return 1
}
