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
