package model

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/kernels"
)

// inferCases are config shapes the forward-only path and the decoder must
// agree with Forward on: every option alone and together.
func inferCases() []struct {
	name string
	mod  func(*Config)
} {
	return []struct {
		name string
		mod  func(*Config)
	}{
		{"all-options", func(*Config) {}},
		{"plain-untied", func(c *Config) {
			c.QKNorm, c.Tied, c.NoPEEvery, c.ZLoss, c.DocMask, c.NKVHeads = false, false, 0, 0, false, 4
		}},
		{"gqa-1kv", func(c *Config) { c.NKVHeads, c.QKNorm, c.NoPEEvery = 1, false, 0 }},
		{"qknorm-untied", func(c *Config) { c.Tied, c.NoPEEvery, c.DocMask, c.NKVHeads = false, 0, false, 4 }},
		{"nope-all", func(c *Config) { c.NoPEEvery, c.QKNorm = 1, false }},
		{"docmask-only", func(c *Config) { c.QKNorm, c.Tied, c.NoPEEvery, c.NKVHeads = false, false, 0, 4 }},
		{"wider", func(c *Config) {
			c.Vocab, c.DModel, c.NHeads, c.NKVHeads, c.MLPHidden, c.SeqLen, c.NLayers, c.InitStd = 300, 64, 4, 2, 96, 40, 3, 0.1
		}},
	}
}

func TestLogProbsMatchesForward(t *testing.T) {
	for _, tc := range inferCases() {
		for _, chunk := range []struct {
			name       string
			rows, head int
			unpacked   bool // W_lm not packed once per call (headPacked false)
		}{{"whole", 1024, 256, false}, {"chunked", 16, 3, false}, {"chunked, W_lm repacked", 16, 3, true}} {
			t.Run(tc.name+"/"+chunk.name, func(t *testing.T) {
				defer func(r, h, l int) { inferRows, headRows, headLogits = r, h, l }(inferRows, headRows, headLogits)
				inferRows, headRows = chunk.rows, chunk.head
				if chunk.unpacked {
					headLogits = 0
				}
				cfg := tinyConfig()
				tc.mod(&cfg)
				m, err := New(cfg, 11)
				if err != nil {
					t.Fatal(err)
				}
				T := cfg.SeqLen - 1
				b := tinyBatch(cfg, 5, T, 21)
				b.Mask = nil
				for i := 0; i < len(b.Targets); i += 4 {
					b.Targets[i] = -1
				}
				got := make([]float32, b.B*b.T)
				for i := range got {
					got[i] = 42 // must be overwritten
				}
				if err := m.LogProbs(b, got); err != nil {
					t.Fatal(err)
				}
				if _, err := m.Forward(b); err != nil {
					t.Fatal(err)
				}
				z, lse := m.Outputs()
				worst := 0.0
				for i, y := range b.Targets {
					want := float32(0)
					if y >= 0 {
						want = z[i*cfg.Vocab+int(y)] - lse[i]
					}
					d := math.Abs(float64(got[i] - want))
					worst = max(worst, d)
					if d > 1e-5 || (y < 0 && got[i] != 0) {
						t.Fatalf("position %d (target %d): LogProbs %g, Forward %g", i, y, got[i], want)
					}
				}
				t.Logf("max |LogProbs − Forward| = %.3g", worst)
			})
		}
	}
}

// TestLogProbsHeadPackedBitIdentical: the head blocks with W_lm packed
// once per call give the same log-probabilities as blocks that pack it in
// each GEMM.
func TestLogProbsHeadPackedBitIdentical(t *testing.T) {
	defer func(h, l int) { headRows, headLogits = h, l }(headRows, headLogits)
	cfg := tinyConfig()
	m, _ := New(cfg, 3)
	b := tinyBatch(cfg, 4, cfg.SeqLen, 8)
	run := func(packed bool) []float32 {
		m.inf = inferScratch{}
		headRows, headLogits = 5, 1<<24
		if !packed {
			headLogits = 0
		}
		if headPacked(cfg) != packed {
			t.Fatalf("headPacked = %v, want %v", headPacked(cfg), packed)
		}
		lp := make([]float32, b.B*b.T)
		if err := m.LogProbs(b, lp); err != nil {
			t.Fatal(err)
		}
		return lp
	}
	a, u := run(true), run(false)
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(u[i]) {
			t.Fatalf("position %d: %v with W_lm packed once, %v repacked", i, a[i], u[i])
		}
	}
}

// TestLogProbsLossBitIdentical: −LogProbs summed as the head sums its loss
// gives ForwardBackward's mean loss bit for bit, and Forward's to 1e-6
// relative (Forward's log-sum-exp runs the scalar exponential).
func TestLogProbsLossBitIdentical(t *testing.T) {
	for _, tc := range inferCases() {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tinyConfig()
			tc.mod(&cfg)
			cfg.ZLoss = 0
			m, _ := New(cfg, 5)
			b := tinyBatch(cfg, 3, cfg.SeqLen, 9)
			b.Mask = nil
			b.Targets[0] = -1
			lp := make([]float32, b.B*b.T)
			if err := m.LogProbs(b, lp); err != nil {
				t.Fatal(err)
			}
			loss, n := LossFromLogProbs(lp, b.Targets)
			fw, err := m.Forward(b)
			if err != nil {
				t.Fatal(err)
			}
			fb, err := m.ForwardBackward(b, 1)
			if err != nil {
				t.Fatal(err)
			}
			if loss != fb.Loss || n != fb.Tokens {
				t.Fatalf("LogProbs loss %v over %d tokens, ForwardBackward %v over %d", loss, n, fb.Loss, fb.Tokens)
			}
			if rel := math.Abs(loss-fw.Loss) / fw.Loss; rel > 1e-6 || n != fw.Tokens {
				t.Fatalf("LogProbs loss %v, Forward %v: relative difference %.3g", loss, fw.Loss, rel)
			}
		})
	}
}

func TestDecoderMatchesLogits(t *testing.T) {
	for _, tc := range inferCases() {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tinyConfig()
			tc.mod(&cfg)
			m, err := New(cfg, 3)
			if err != nil {
				t.Fatal(err)
			}
			r := rand.New(rand.NewPCG(4, 4))
			toks := make([]int32, cfg.SeqLen)
			for i := range toks {
				toks[i] = int32(r.IntN(cfg.Vocab))
			}
			d, err := m.NewDecoder(cfg.SeqLen)
			if err != nil {
				t.Fatal(err)
			}
			got := make([]float32, cfg.Vocab)
			want := make([]float32, cfg.Vocab)
			for pass := 0; pass < 2; pass++ { // the second pass after Reset
				d.Reset()
				steps := []int{1, 3, 1, 2}
				for i, at := 0, 0; at < len(toks); i++ {
					n := min(steps[i%len(steps)], len(toks)-at)
					if pass == 1 {
						n = min(5, len(toks)-at)
					}
					if err := d.Append(toks[at:at+n], got); err != nil {
						t.Fatal(err)
					}
					at += n
					if d.Len() != at {
						t.Fatalf("Len %d after %d tokens", d.Len(), at)
					}
					if err := m.Logits(toks[:at], want); err != nil {
						t.Fatal(err)
					}
					for j := range got {
						if math.Abs(float64(got[j]-want[j])) > 1e-5 {
							t.Fatalf("pass %d, prefix %d, logit %d: decoder %g, Logits %g", pass, at, j, got[j], want[j])
						}
					}
				}
			}
			if err := d.Append(toks[:1], got); err == nil || !strings.Contains(err.Error(), "exceeds") {
				t.Fatalf("append past the length: %v", err)
			}
		})
	}
}

func TestDecoderBadInput(t *testing.T) {
	cfg := tinyConfig()
	m, _ := New(cfg, 1)
	for _, n := range []int{0, -1, cfg.SeqLen + 1} {
		if _, err := m.NewDecoder(n); err == nil || !strings.Contains(err.Error(), "seq_len") {
			t.Errorf("NewDecoder(%d): %v", n, err)
		}
	}
	d, _ := m.NewDecoder(4)
	lg := make([]float32, cfg.Vocab)
	cases := []struct {
		toks   []int32
		logits []float32
		want   string
	}{
		{nil, lg, "no tokens"},
		{[]int32{1, 99}, lg, "token[1]=99"},
		{[]int32{1, -2}, lg, "token[1]=-2"},
		{[]int32{1}, lg[:3], "vocab"},
		{[]int32{1, 2, 3, 4, 5}, lg, "exceeds"},
	}
	for _, c := range cases {
		if err := d.Append(c.toks, c.logits); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Append(%v): want error containing %q, got %v", c.toks, c.want, err)
		}
		if d.Len() != 0 {
			t.Fatalf("failed Append changed Len to %d", d.Len())
		}
	}
	if err := d.Append([]int32{1, 2}, nil); err != nil || d.Len() != 2 {
		t.Fatalf("prefill without logits: %v, Len %d", err, d.Len())
	}

	b := tinyBatch(cfg, 2, 4, 1)
	for _, c := range []struct {
		dst  []float32
		mut  func(*Batch)
		want string
	}{
		{make([]float32, 7), func(*Batch) {}, "dst has length 7"},
		{make([]float32, 8), func(b *Batch) { b.Targets[5] = 11 }, "Targets[5]=11"},
		{make([]float32, 8), func(b *Batch) { b.Inputs[0] = -1 }, "Inputs[0]=-1"},
	} {
		bb := *b
		bb.Inputs = append([]int32(nil), b.Inputs...)
		bb.Targets = append([]int32(nil), b.Targets...)
		c.mut(&bb)
		if err := m.LogProbs(&bb, c.dst); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("LogProbs: want error containing %q, got %v", c.want, err)
		}
	}
}

func TestInferZeroAllocs(t *testing.T) {
	cfg := tinyConfig()
	m, _ := New(cfg, 1)
	b := tinyBatch(cfg, 3, 8, 1)
	lp := make([]float32, 24)
	d, _ := m.NewDecoder(cfg.SeqLen)
	lg := make([]float32, cfg.Vocab)
	toks := []int32{1, 2, 3, 4, 5, 6} // a prefill past gemvRows: the SGEMM path
	run := func() {
		if err := m.LogProbs(b, lp); err != nil {
			t.Fatal(err)
		}
		d.Reset()
		if err := d.Append(toks, lg); err != nil {
			t.Fatal(err)
		}
		if err := d.Append(toks[:1], lg); err != nil {
			t.Fatal(err)
		}
	}
	run()
	if a := testing.AllocsPerRun(5, run); a != 0 {
		t.Fatalf("%v allocations per call, want 0", a)
	}
}

// TestInferHeadBlockWholeTiles: a forward-only head block derived from the
// logits budget and shorter than the chunk holds whole GEMM row tiles, no
// more positions than the budget allows, and a block covering the whole
// chunk is left as it is.
func TestInferHeadBlockWholeTiles(t *testing.T) {
	mr := kernels.GemmMR()
	for _, tc := range []struct {
		vocab, seqs, T int
		budget         int // floats of logits per block
	}{{8192, 8, 256, headLogitsPacked}, {1000, 2, 64, 50_000}, {300, 1, 32, 1 << 20}} {
		c := Config{Vocab: tc.vocab, DModel: 16, NLayers: 1, NHeads: 2, NKVHeads: 2, MLPHidden: 32, SeqLen: tc.T}
		var s inferScratch
		func() {
			defer func(l, p int) { headLogits, headLogitsPacked = l, p }(headLogits, headLogitsPacked)
			headLogits, headLogitsPacked = tc.budget, tc.budget
			s.ensure(c, tc.seqs)
		}()
		N := tc.seqs * tc.T
		raw := max(64, tc.budget/tc.vocab)
		switch {
		case raw >= N:
			if s.headN != N {
				t.Errorf("vocab %d, %d rows: block %d, want the whole chunk", tc.vocab, N, s.headN)
			}
		case s.headN%mr != 0 || s.headN > raw || s.headN <= raw-mr:
			t.Errorf("vocab %d: block %d rows, want the largest multiple of %d up to %d", tc.vocab, s.headN, mr, raw)
		}
	}
}
