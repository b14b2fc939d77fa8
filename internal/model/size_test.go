package model

import (
	"math"
	"strings"
	"testing"
)

// TestValidateBounds: every size field is bounded, so the size arithmetic
// cannot overflow; a vocab of 2^62 (which overflowed V·D and panicked in
// New) is an error naming model.vocab, from Validate, New and the size
// functions alike.
func TestValidateBounds(t *testing.T) {
	for _, tc := range []struct {
		field string
		set   func(*Config)
	}{
		{"model.vocab", func(c *Config) { c.Vocab = 4611686018427387904 }},
		{"model.vocab", func(c *Config) { c.Vocab = MaxVocab + 1 }},
		{"model.d_model", func(c *Config) { c.DModel, c.NHeads, c.NKVHeads = 1<<40, 1, 1 }},
		{"model.n_layers", func(c *Config) { c.NLayers = MaxLayers + 1 }},
		{"model.n_heads", func(c *Config) { c.NHeads = math.MaxInt }},
		{"model.n_kv_heads", func(c *Config) { c.NKVHeads = math.MaxInt }},
		{"model.mlp_hidden", func(c *Config) { c.MLPHidden = 1 << 50 }},
		{"model.seq_len", func(c *Config) { c.SeqLen = MaxSeqLen + 1 }},
		{"model.rope_theta", func(c *Config) { c.RopeTheta = math.NaN() }},
		{"model.norm_eps", func(c *Config) { c.NormEps = math.Inf(1) }},
		{"model.z_loss", func(c *Config) { c.ZLoss = math.NaN() }},
		{"model.init_std", func(c *Config) { c.InitStd = math.NaN() }},
	} {
		t.Run(tc.field, func(t *testing.T) {
			c := DefaultConfig()
			tc.set(&c)
			if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.field) {
				t.Fatalf("Validate: %v, want an error naming %s", err, tc.field)
			}
			if _, err := New(c, 1); err == nil || !strings.Contains(err.Error(), tc.field) {
				t.Fatalf("New: %v, want an error naming %s", err, tc.field)
			}
			if _, err := c.NumParams(); err == nil {
				t.Fatal("NumParams: no error")
			}
			if _, err := c.ActivationBytes(1); err == nil {
				t.Fatal("ActivationBytes: no error")
			}
		})
	}
	// the largest valid model: sizes are computed, nothing is allocated
	c := Config{Vocab: MaxVocab, DModel: MaxDModel, NLayers: MaxLayers, NHeads: MaxDModel / 2, NKVHeads: MaxDModel / 2,
		MLPHidden: MaxMLPHidden, SeqLen: MaxSeqLen, RopeTheta: 1e4, NormEps: 1e-5, InitStd: 0.02, QKNorm: true}
	n, err := c.NumParams()
	if err != nil || n <= 0 || n >= 1<<50 {
		t.Fatalf("NumParams of the largest model = %d, %v: want in (0, 2^50)", n, err)
	}
	if b, err := c.ActivationBytes(math.MaxInt); err != nil || b != math.MaxInt {
		t.Fatalf("ActivationBytes(MaxInt) of the largest model = %d, %v: want saturated at MaxInt", b, err)
	}
}

// TestSizesMatchAllocation: NumParams is the length of New's parameter
// buffer and ActivationBytes(B) is what passes over B sequences allocate
// (arena + RoPE tables) once a Forward has needed every logit: the
// estimate and the allocation share one layout. Training alone holds
// one chunk of the training head's logits instead of all B·seq_len rows.
func TestSizesMatchAllocation(t *testing.T) {
	plain := tinyConfig()
	plain.QKNorm, plain.Tied = false, false
	long := headConfig()
	long.SeqLen = 512 // 3 sequences are more than one head chunk of 512 rows on every kernel
	saved := headChunkBytes
	headChunkBytes = 512 * long.Vocab * 4
	t.Cleanup(func() { headChunkBytes = saved })
	for _, c := range []Config{tinyConfig(), plain, DefaultConfig(), long} {
		m, err := New(c, 1)
		if err != nil {
			t.Fatal(err)
		}
		if n, err := c.NumParams(); err != nil || n != len(m.Params) {
			t.Fatalf("NumParams = %d, %v; New allocated %d", n, err, len(m.Params))
		}
		for _, B := range []int{1, 3, 2} { // the arena only grows: B=2 keeps B=3's
			if _, err := m.ForwardBackward(tinyBatch(c, B, c.SeqLen, 1), 1); err != nil {
				t.Fatal(err)
			}
		}
		want, err := c.ActivationBytes(3)
		if err != nil {
			t.Fatal(err)
		}
		rope := 4 * (len(m.cos) + len(m.sin))
		N := 3 * c.SeqLen
		notHeld := 4 * (N - min(N, m.headChunk())) * logitsStride(c.Vocab)
		if c.SeqLen == long.SeqLen && notHeld == 0 {
			t.Fatalf("seq_len %d: 3 sequences fit one head chunk of %d rows", c.SeqLen, m.headChunk())
		}
		if got := m.ArenaBytes() + rope; got != want-notHeld {
			t.Fatalf("ActivationBytes(3) = %d less %d bytes of logits that training does not hold; training allocated %d", want, notHeld, got)
		}
		if _, err := m.Forward(tinyBatch(c, 3, c.SeqLen, 2)); err != nil {
			t.Fatal(err)
		}
		if got := m.ArenaBytes() + rope; got != want {
			t.Fatalf("ActivationBytes(3) = %d; training and a Forward allocated %d", want, got)
		}
		if _, err := c.ActivationBytes(0); err == nil {
			t.Fatal("ActivationBytes(0): no error")
		}
	}
}
