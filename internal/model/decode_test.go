package model

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/kernels/ops"
)

// TestBatchDecoderMatchesReference: sequences fed in lockstep through one
// BatchDecoder get the logits, bit for bit, that the one-sequence decoder
// as it was (refDecoder) computes for each alone: chunks of 1 to 5 tokens
// (both sides of gemvRows) mixed in one pass, idle sequences, prefills
// without logits, resets, a pass budget smaller than the batch (several
// passes per Append), chunks longer than decRows, and bf16.
func TestBatchDecoderMatchesReference(t *testing.T) {
	type variant struct {
		name     string
		passRows int
		seqLen   int
		bf16     bool
	}
	variants := []variant{{"one-pass", 0, 0, false}, {"passes-of-7", 7, 0, false}, {"bf16", 0, 0, true}, {"long-chunks", 0, 150, false}}
	for _, tc := range inferCases() {
		for _, vr := range variants {
			t.Run(tc.name+"/"+vr.name, func(t *testing.T) {
				cfg := tinyConfig()
				tc.mod(&cfg)
				if vr.seqLen > 0 {
					cfg.SeqLen = vr.seqLen
				}
				m, err := New(cfg, 3)
				if err != nil {
					t.Fatal(err)
				}
				if vr.bf16 {
					m.SetPrecision(ops.BF16)
				}
				if vr.passRows > 0 {
					defer func(r int) { decPassRows = r }(decPassRows)
					decPassRows = vr.passRows
				}
				checkBatchDecoder(t, m, 5, uint64(len(tc.name)))
			})
		}
	}
}

// checkBatchDecoder runs random rounds of Appends on seqs sequences through
// a BatchDecoder and one refDecoder per sequence and compares the logits.
func checkBatchDecoder(t *testing.T, m *Model, seqs int, seed uint64) {
	t.Helper()
	cfg := m.Cfg
	V, SL := cfg.Vocab, cfg.SeqLen
	bd, err := m.NewBatchDecoder(seqs, SL)
	if err != nil {
		t.Fatal(err)
	}
	refs := make([]*refDecoder, seqs)
	for i := range refs {
		if refs[i], err = newRefDecoder(m, SL); err != nil {
			t.Fatal(err)
		}
	}
	r := rand.New(rand.NewPCG(seed, 11))
	got := make([]float32, seqs*V)
	want := make([]float32, V)
	toks := make([][]int32, seqs)
	for round := range 40 {
		lens := []int{0, 1, 2, 3, 5, 6, SL}
		for i := range toks {
			if bd.Len(i) == SL || r.IntN(6) == 0 {
				bd.Reset(i)
				refs[i].Reset()
			}
			n := min(lens[r.IntN(len(lens))], SL-bd.Len(i))
			toks[i] = toks[i][:0]
			for range n {
				toks[i] = append(toks[i], int32(r.IntN(V)))
			}
		}
		withLogits := round%7 != 3
		var dst []float32
		if withLogits {
			dst = got
			for i := range got {
				got[i] = float32(math.NaN())
			}
		}
		if err := bd.Append(toks, dst); err != nil {
			t.Fatal(err)
		}
		for i, ts := range toks {
			if len(ts) == 0 {
				if withLogits && !math.IsNaN(float64(got[i*V])) {
					t.Fatalf("round %d: idle sequence %d got logits", round, i)
				}
				continue
			}
			var wdst []float32
			if withLogits {
				wdst = want
			}
			if err := refs[i].Append(ts, wdst); err != nil {
				t.Fatal(err)
			}
			if bd.Len(i) != refs[i].Len() {
				t.Fatalf("round %d, sequence %d: Len %d, reference %d", round, i, bd.Len(i), refs[i].Len())
			}
			if !withLogits {
				continue
			}
			for j := range want {
				if math.Float32bits(got[i*V+j]) != math.Float32bits(want[j]) {
					t.Fatalf("round %d, sequence %d (%d new tokens at %d), logit %d: batched %g, reference %g",
						round, i, len(ts), bd.Len(i)-len(ts), j, got[i*V+j], want[j])
				}
			}
		}
	}
}

// TestBatchDecoderMoE: a mixture-of-experts model takes Logits over each
// sequence's context, as the one-sequence decoder does.
func TestBatchDecoderMoE(t *testing.T) {
	c := tinyConfig()
	c.Vocab, c.SeqLen = 31, 12
	c.MoEEvery, c.MoEExperts, c.MoETopK, c.MoEExpertHidden = 1, 4, 2, 16
	c.MoENormTopK, c.MoEBalance, c.MoEAuxLossAlpha, c.MoERouterZLoss, c.MoEBiasRate = true, "aux", 0.01, 0.001, 0.001
	m, err := New(c, 5)
	if err != nil {
		t.Fatal(err)
	}
	V := m.Cfg.Vocab
	bd, err := m.NewBatchDecoder(2, m.Cfg.SeqLen)
	if err != nil {
		t.Fatal(err)
	}
	ctx := [][]int32{{1, 2, 3}, {4}}
	got := make([]float32, 2*V)
	if err := bd.Append(ctx, got); err != nil {
		t.Fatal(err)
	}
	got[V] = -1 // sequence 1 idle: its logits untouched
	if err := bd.Append([][]int32{{5}, nil}, got); err != nil {
		t.Fatal(err)
	}
	if got[V] != -1 {
		t.Fatal("an idle sequence's logits were written")
	}
	if err := bd.Append([][]int32{nil, {4}}, got[:0:0]); err == nil {
		t.Fatal("logits of length 0 accepted")
	}
	want := make([]float32, V)
	if err := bd.Append([][]int32{nil, {6}}, got); err != nil {
		t.Fatal(err)
	}
	for i, full := range [][]int32{{1, 2, 3, 5}, {4, 6}} {
		if err := m.Logits(full, want); err != nil {
			t.Fatal(err)
		}
		for j := range want {
			if math.Abs(float64(got[i*V+j]-want[j])) > 1e-5 {
				t.Fatalf("sequence %d logit %d: decoder %g, Logits %g", i, j, got[i*V+j], want[j])
			}
		}
	}
}

func TestBatchDecoderBadInput(t *testing.T) {
	cfg := tinyConfig()
	m, _ := New(cfg, 1)
	if _, err := m.NewBatchDecoder(0, 4); err == nil || !strings.Contains(err.Error(), "sequences") {
		t.Errorf("NewBatchDecoder(0, 4): %v", err)
	}
	d, _ := m.NewBatchDecoder(2, 4)
	lg := make([]float32, 2*cfg.Vocab)
	for _, c := range []struct {
		toks   [][]int32
		logits []float32
		want   string
	}{
		{[][]int32{{1}}, lg, "Append of 1 sequences, want 2"},
		{[][]int32{{1}, {2, 99}}, lg, "sequence 1: model: decoder token[1]=99"},
		{[][]int32{{1, 2, 3, 4, 5}, {1}}, lg, "sequence 0: model: decoder context of 0+5 tokens exceeds"},
		{[][]int32{{1}, {1}}, lg[:cfg.Vocab], "want 2 sequences × vocab"},
	} {
		if err := d.Append(c.toks, c.logits); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Append(%v): want error containing %q, got %v", c.toks, c.want, err)
		}
		if d.Len(0) != 0 || d.Len(1) != 0 {
			t.Fatalf("failed Append changed Len to %d, %d", d.Len(0), d.Len(1))
		}
	}
}
