package model

import (
	"math"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/kernels/ops"
)

// sameGrads fails unless got and want are equal bit for bit, an exact zero
// of either sign matching the other (StartAccumulation's first pass writes
// what ZeroGrads + add gave, except that 0 + (−0) = +0: see
// TestStartAccumulationMatchesZeroGrads). It returns how many −0/+0 pairs it
// let through.
func sameGrads(t *testing.T, what string, m *Model, got, want []float32) int {
	t.Helper()
	signed := 0
	for i := range want {
		g, w := math.Float32bits(got[i]), math.Float32bits(want[i])
		if g == w {
			continue
		}
		if got[i] == 0 && want[i] == 0 {
			signed++
			continue
		}
		name := "?"
		for _, x := range m.Tensors() {
			if i >= x.Offset && i < x.Offset+x.Size {
				name = x.Name
			}
		}
		t.Fatalf("%s: Grads[%d] (%s) = %v, want %v (ZeroGrads + accumulate)", what, i, name, got[i], want[i])
	}
	return signed
}

// TestStartAccumulationMatchesZeroGrads: StartAccumulation and 1, 2, 3
// passes leave the same gradient, bit for bit, as ZeroGrads and the same
// passes (the reference: every writer adding onto a cleared buffer), for
// every writer of Grads — weight-gradient GEMMs (the lm_head's in one and
// in several chunks, packed and not), norm and QK-norm gains, the embedding
// scatter, tied and untied, MoE experts (one of them idle), router and
// shared expert, fp32 and bf16. The buffer starts poisoned with NaN, and
// later steps start from the previous step's stale gradient (a skipped
// step: no update in between; a rewind: the weights put back), so a writer
// that read what it should overwrite shows.
func TestStartAccumulationMatchesZeroGrads(t *testing.T) {
	var sawIdle, sawPacked, sawChunks bool
	for _, tc := range []struct {
		name  string
		cfg   func() Config
		B     int
		rows  int // headRows (0: default)
		prec  ops.Precision
		check func(m *Model)
	}{
		{name: "dense-tied-qknorm-docmask", cfg: tinyConfig, B: 3},
		{name: "dense-untied", B: 2, cfg: func() Config {
			c := tinyConfig()
			c.QKNorm, c.Tied, c.DocMask, c.NoPEEvery, c.ZLoss = false, false, false, 0, 0
			return c
		}},
		{name: "chunked-head", B: 12, rows: 1, cfg: func() Config {
			c := tinyConfig()
			c.SeqLen, c.Vocab = 64, 65
			return c
		}},
		{name: "chunked-head-untied", B: 12, rows: 1, cfg: func() Config {
			c := tinyConfig()
			c.SeqLen, c.Vocab, c.Tied = 64, 65, false
			return c
		}},
		{name: "bf16", cfg: tinyConfig, B: 3, prec: ops.BF16},
		{name: "bf16-chunked-head-untied", B: 12, rows: 1, prec: ops.BF16, cfg: func() Config {
			c := tinyConfig()
			c.SeqLen, c.Vocab, c.Tied = 64, 65, false
			return c
		}},
		{name: "moe-shared-aux", cfg: moeConfig, B: 2},
		{name: "moe-idle-expert", B: 1, cfg: func() Config {
			c := moeConfig()
			// 8 experts, top-1 of 8 tokens with a capacity: some get none
			c.MoEEvery, c.MoEExperts, c.MoETopK, c.MoESharedExpert, c.MoENormTopK = 1, 8, 1, false, false
			c.MoEBalance, c.SeqLen = "bias", 4
			return c
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg()
			ref, err := New(cfg, 3)
			if err != nil {
				t.Fatal(err)
			}
			m, err := New(cfg, 3)
			if err != nil {
				t.Fatal(err)
			}
			for _, x := range []*Model{ref, m} {
				x.SetPrecision(tc.prec)
				x.headRows = tc.rows
			}
			N := tc.B * cfg.SeqLen
			if headPackedFloats(cfg, N, m.headChunk()) > 0 && tc.prec == ops.FP32 {
				sawPacked = true
			}
			sawChunks = sawChunks || N > m.headChunk()
			for i := range m.Grads {
				m.Grads[i] = float32(math.NaN())
			}
			saved := append([]float32(nil), m.Params...)
			signed := 0
			seed := uint64(10)
			// step 1, 2 (after a skipped step: no update), 3 after an
			// update, 4 after a rewind to the weights before it
			for step, k := range []int{1, 2, 3, 3} {
				if step == 3 {
					copy(ref.Params, saved)
					copy(m.Params, saved)
				}
				ref.ZeroGrads()
				m.StartAccumulation()
				for pass := 0; pass < k; pass++ {
					seed++
					b := tinyBatch(cfg, tc.B, cfg.SeqLen, seed)
					if !cfg.DocMask {
						b.SegIDs = nil
					}
					want, err := ref.ForwardBackward(b, 1/float32(k))
					if err != nil {
						t.Fatal(err)
					}
					got, err := m.ForwardBackward(b, 1/float32(k))
					if err != nil {
						t.Fatal(err)
					}
					if math.Float64bits(got.Loss) != math.Float64bits(want.Loss) || got.MoEAux != want.MoEAux {
						t.Fatalf("step %d pass %d: loss %v aux %v, want %v %v", step, pass, got.Loss, got.MoEAux, want.Loss, want.MoEAux)
					}
					signed += sameGrads(t, tc.name, m, m.Grads, ref.Grads)
					if tc.check != nil {
						tc.check(m)
					}
					for _, st := range m.moe.layers {
						for e := 0; e < cfg.MoEExperts; e++ {
							if st.off[e] == st.off[e+1] {
								sawIdle = true
							}
						}
					}
				}
				if step == 2 { // an update both take
					saved = append(saved[:0], m.Params...)
					for i := range m.Params {
						m.Params[i] -= 0.05 * m.Grads[i]
						ref.Params[i] -= 0.05 * ref.Grads[i]
					}
				}
			}
			if signed > 0 {
				t.Logf("%d exact zeros differ in sign only", signed)
			}
		})
	}
	if !sawIdle || !sawPacked || !sawChunks {
		t.Errorf("cases missed a writer: idle expert %v, packed lm_head %v, chunked head %v", sawIdle, sawPacked, sawChunks)
	}
}

// TestForwardBackwardWithoutStartAdds: a pass without StartAccumulation
// adds (eval, benchmarks and tests that call ForwardBackward on their own
// keep their meaning), and ZeroGrads cancels a pending StartAccumulation.
func TestForwardBackwardWithoutStartAdds(t *testing.T) {
	cfg := tinyConfig()
	ref, _ := New(cfg, 5)
	m, _ := New(cfg, 5)
	b := tinyBatch(cfg, 2, cfg.SeqLen, 1)
	for _, x := range []*Model{ref, m} {
		x.ZeroGrads()
		if _, err := x.ForwardBackward(b, 1); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := ref.ForwardBackward(b, 1); err != nil { // adds
		t.Fatal(err)
	}
	m.StartAccumulation()
	m.ZeroGrads() // the clear wins: the pass adds onto zeros
	if _, err := m.ForwardBackward(b, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := m.ForwardBackward(b, 1); err != nil { // adds
		t.Fatal(err)
	}
	sameGrads(t, "two passes after ZeroGrads", m, m.Grads, ref.Grads)
	// a failed pass leaves StartAccumulation pending
	ref.ZeroGrads()
	if _, err := ref.ForwardBackward(b, 1); err != nil {
		t.Fatal(err)
	}
	m.StartAccumulation()
	if _, err := m.ForwardBackward(&Batch{B: 1, T: 2, Inputs: []int32{0, 99}, Targets: []int32{0, 0}}, 1); err == nil {
		t.Fatal("token 99 outside the vocab: no error")
	}
	if _, err := m.ForwardBackward(b, 1); err != nil {
		t.Fatal(err)
	}
	sameGrads(t, "after a failed pass", m, m.Grads, ref.Grads)
}
