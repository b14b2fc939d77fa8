package memplan

import (
	"math"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/model"
)

func tiny() model.Config {
	c := model.DefaultConfig()
	c.Vocab, c.DModel, c.NLayers, c.NHeads, c.NKVHeads, c.MLPHidden, c.SeqLen = 256, 32, 2, 2, 2, 64, 16
	return c
}

// TestEstimateParts: each part of the estimate from the model's layout,
// the arena for the larger of micro-batch and probe, and every other
// replica's gradients and micro-batch arena (none for an MoE model, which
// has no replicas, nor for replicas below 2).
func TestEstimateParts(t *testing.T) {
	moe := tiny()
	moe.MoEEvery, moe.MoEExperts, moe.MoETopK, moe.MoEExpertHidden = 1, 4, 2, 32
	for _, c := range []struct {
		name                   string
		mc                     model.Config
		micro, probe, replicas int
		ema                    bool
		seqs, wantReps, grads  int
		arena                  func(model.Config) int
	}{
		{"one", tiny(), 6, 4, 1, true, 6, 1, 1, func(m model.Config) int { return act(t, m, 6) }},
		{"probe larger", tiny(), 2, 4, 1, false, 4, 1, 1, func(m model.Config) int { return act(t, m, 4) }},
		{"zero replicas", tiny(), 6, 4, 0, false, 6, 1, 1, func(m model.Config) int { return act(t, m, 6) }},
		{"two replicas", tiny(), 6, 4, 2, true, 6, 2, 2, func(m model.Config) int { return 2 * act(t, m, 6) }},
		{"probe and replicas", tiny(), 2, 4, 3, false, 4, 3, 3, func(m model.Config) int { return act(t, m, 4) + 2*act(t, m, 2) }},
		{"moe has none", moe, 6, 4, 2, false, 6, 1, 1, func(m model.Config) int { return act(t, m, 6) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, err := Estimate(c.mc, c.micro, c.probe, c.replicas, c.ema)
			if err != nil {
				t.Fatal(err)
			}
			n, _ := c.mc.NumParams()
			p := 4 * n
			if m.Params != p || m.Grads != c.grads*p || m.Activations != c.arena(c.mc) || m.Sequences != c.seqs || m.Replicas != c.wantReps ||
				m.Checkpoint != 4*p || m.Runtime != RuntimeBytes || (m.EMA == p) != c.ema || (m.EMAEval == p) != c.ema {
				t.Errorf("%+v for %d parameters", m, n)
			}
			sum := m.Params + m.Grads + m.Optimizer + m.EMA + m.Activations + m.Checkpoint + m.EMAEval + m.Runtime
			if m.Total() != sum {
				t.Errorf("Total %d, parts sum to %d", m.Total(), sum)
			}
		})
	}
	if _, err := Estimate(tiny(), 0, 0, 2, false); err == nil {
		t.Error("a pass of 0 sequences was estimated")
	}
	bad := tiny()
	bad.DModel = 0
	if _, err := Estimate(bad, 6, 4, 1, false); err == nil {
		t.Error("an invalid model was estimated")
	}
	if (Memory{Params: math.MaxInt, Grads: 1}).Total() != math.MaxInt {
		t.Error("Total does not saturate")
	}
}

func act(t *testing.T, m model.Config, b int) int {
	t.Helper()
	a, err := m.ActivationBytes(b)
	if err != nil {
		t.Fatal(err)
	}
	return a
}
