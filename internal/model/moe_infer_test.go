package model

import (
	"math"
	"testing"
)

// TestMoELogProbsAndDecoder: an MoE model's LogProbs and Decoder give the
// values of Forward and Logits (they take the full forward for MoE layers).
func TestMoELogProbsAndDecoder(t *testing.T) {
	c := tinyConfig()
	c.Vocab, c.SeqLen = 31, 12
	c.MoEEvery, c.MoEExperts, c.MoETopK, c.MoEExpertHidden = 1, 4, 2, 16
	c.MoENormTopK, c.MoEBalance, c.MoEAuxLossAlpha, c.MoERouterZLoss, c.MoEBiasRate = true, "aux", 0.01, 0.001, 0.001
	m, err := New(c, 3)
	if err != nil {
		t.Fatal(err)
	}
	b := tinyBatch(c, 2, c.SeqLen, 5)
	b.Mask = nil
	dst := make([]float32, 2*c.SeqLen)
	if err := m.LogProbs(b, dst); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Forward(b); err != nil {
		t.Fatal(err)
	}
	logits, lse := m.Outputs()
	for i, y := range b.Targets {
		want := float32(0)
		if y >= 0 {
			want = logits[i*c.Vocab+int(y)] - lse[i]
		}
		if math.Abs(float64(dst[i]-want)) > 1e-5 {
			t.Fatalf("position %d: LogProbs %v, Forward %v", i, dst[i], want)
		}
	}
	d, err := m.NewDecoder(c.SeqLen)
	if err != nil {
		t.Fatal(err)
	}
	got, want := make([]float32, c.Vocab), make([]float32, c.Vocab)
	toks := b.Inputs[:c.SeqLen]
	if err := d.Append(toks[:5], got); err != nil {
		t.Fatal(err)
	}
	for n := 5; n <= len(toks); n++ {
		if n > 5 {
			if err := d.Append(toks[n-1:n], got); err != nil {
				t.Fatal(err)
			}
		}
		if err := m.Logits(toks[:n], want); err != nil {
			t.Fatal(err)
		}
		for v := range want {
			if math.Abs(float64(got[v]-want[v])) > 1e-5 {
				t.Fatalf("%d tokens, logit %d: decoder %v, Logits %v", n, v, got[v], want[v])
			}
		}
	}
	if d.Len() != len(toks) {
		t.Fatalf("Len %d", d.Len())
	}
	if err := d.Append(toks[:1], got); err == nil {
		t.Fatal("Append past the decoder's length accepted")
	}
	d.Reset()
	if d.Len() != 0 || d.Append(toks[:3], got) != nil {
		t.Fatal("Reset")
	}
}
