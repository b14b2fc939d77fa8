package model

import (
	"math/rand/v2"
	"testing"
)

func ref7mBatch(cfg Config, B int) *Batch {
	r := rand.New(rand.NewPCG(1, 1))
	bt := &Batch{B: B, T: cfg.SeqLen, Inputs: make([]int32, B*cfg.SeqLen), Targets: make([]int32, B*cfg.SeqLen)}
	for i := range bt.Inputs {
		bt.Inputs[i] = int32(r.IntN(cfg.Vocab))
		bt.Targets[i] = int32(r.IntN(cfg.Vocab))
	}
	return bt
}

// BenchmarkForwardRef7m times Forward (the evaluation path before
// LogProbs) on 8×256 ref7m tokens; BenchmarkLogProbsRef7m the forward-only
// path on the same batch (the full comparison is `kestrel bench eval`).
func BenchmarkForwardRef7m(b *testing.B) {
	m, _ := New(ref7m(), 1)
	bt := ref7mBatch(m.Cfg, 8)
	m.Forward(bt)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := m.Forward(bt); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(8*m.Cfg.SeqLen*b.N)/b.Elapsed().Seconds(), "tok/s")
}

func BenchmarkLogProbsRef7m(b *testing.B) {
	m, _ := New(ref7m(), 1)
	bt := ref7mBatch(m.Cfg, 8)
	lp := make([]float32, 8*m.Cfg.SeqLen)
	m.LogProbs(bt, lp)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := m.LogProbs(bt, lp); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(8*m.Cfg.SeqLen*b.N)/b.Elapsed().Seconds(), "tok/s")
}

// shakespeareChar is configs/shakespeare-char.toml's model.
func shakespeareChar() Config {
	return Config{Vocab: 256, DModel: 128, NLayers: 4, NHeads: 4, NKVHeads: 4, MLPHidden: 384, SeqLen: 64,
		RopeTheta: 10000, NormEps: 1e-5, Tied: true, InitStd: 0.02}
}

// BenchmarkDecoderSlide times the memorization benchmark's decoding step on
// shakespeare-char (seq_len 64 = the prefix, so every token refills its
// sequence's cache with the last 64 tokens): 50 sequences one at a time
// through a Decoder (one) against all 50 in one BatchDecoder Append (batch).
func BenchmarkDecoderSlide(b *testing.B) {
	const seqs = 50
	m, _ := New(shakespeareChar(), 1)
	T, V := m.Cfg.SeqLen, m.Cfg.Vocab
	bt := ref7mBatch(m.Cfg, seqs)
	toks := make([][]int32, seqs)
	for i := range toks {
		toks[i] = bt.Inputs[i*T : (i+1)*T]
	}
	b.Run("one", func(b *testing.B) {
		d, _ := m.NewDecoder(T)
		lg := make([]float32, V)
		for b.Loop() {
			for _, ts := range toks {
				d.Reset()
				if err := d.Append(ts, lg); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(float64(seqs*T*b.N)/b.Elapsed().Seconds(), "tok/s")
	})
	b.Run("batch", func(b *testing.B) {
		d, _ := m.NewBatchDecoder(seqs, T)
		lg := make([]float32, seqs*V)
		for b.Loop() {
			for i := range toks {
				d.Reset(i)
			}
			if err := d.Append(toks, lg); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(seqs*T*b.N)/b.Elapsed().Seconds(), "tok/s")
	})
}
