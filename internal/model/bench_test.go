package model

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/kernels"
)

func ref7m() Config {
	return Config{Vocab: 8192, DModel: 256, NLayers: 4, NHeads: 4, NKVHeads: 4, MLPHidden: 768,
		SeqLen: 256, RopeTheta: 10000, NormEps: 1e-5, InitStd: 0.02}
}

// benchBatch is B sequences of cfg.SeqLen random tokens and targets
// (seeded: the same batch every run).
func benchBatch(cfg Config, B int) *Batch {
	r := rand.New(rand.NewPCG(1, 1))
	bt := &Batch{B: B, T: cfg.SeqLen, Inputs: make([]int32, B*cfg.SeqLen), Targets: make([]int32, B*cfg.SeqLen)}
	for i := range bt.Inputs {
		bt.Inputs[i] = int32(r.IntN(cfg.Vocab))
		bt.Targets[i] = int32(r.IntN(cfg.Vocab))
	}
	return bt
}

// BenchmarkForwardBackwardRef7m times one ref7m micro-batch of 8×256 tokens
// (the full bench is `kestrel bench step`).
func BenchmarkForwardBackwardRef7m(b *testing.B) {
	cfg := ref7m()
	m, err := New(cfg, 1)
	if err != nil {
		b.Fatal(err)
	}
	const B = 8
	bt := benchBatch(cfg, B)
	m.ForwardBackward(bt, 1)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		m.ZeroGrads()
		if _, err := m.ForwardBackward(bt, 1); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(B*cfg.SeqLen*b.N)/b.Elapsed().Seconds(), "tok/s")
}

// BenchmarkHeadRef7m times the training head alone (final norm, lm_head,
// cross-entropy and the lm_head gradient GEMMs) on a ref7m micro-batch of
// 8×256 tokens, fused over chunks of rows rows (2048 = the whole batch in
// one chunk, as before the fusion). Run with -test.cpu 1,2 for both thread
// counts.
func BenchmarkHeadRef7m(b *testing.B) {
	cfg := ref7m()
	const B = 8
	bt := benchBatch(cfg, B)
	for _, rows := range []int{512, 1024, 2048} {
		b.Run(fmt.Sprintf("rows=%d", rows), func(b *testing.B) {
			kernels.SetThreads(runtime.GOMAXPROCS(0))
			m, err := New(cfg, 1)
			if err != nil {
				b.Fatal(err)
			}
			m.headRows = rows
			if _, err := m.ForwardBackward(bt, 1); err != nil { // sizes the arena and fills the activations
				b.Fatal(err)
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				m.headTrain(bt, 1)
			}
			b.ReportMetric(float64(B*cfg.SeqLen*b.N)/b.Elapsed().Seconds(), "tok/s")
		})
	}
}

// BenchmarkForwardBackwardShakespeare times one shakespeare-char
// micro-batch (6×64 tokens, d 128, 4 layers of 4 heads of 32, SwiGLU 384,
// vocab 256, tied): the small-model case of issue 39, where attention at
// short context and the elementwise passes are a fifth of the step. It
// reports the process's CPU time per micro-batch over the threads beside
// the wall time (on a shared machine less disturbed by other processes).
func BenchmarkForwardBackwardShakespeare(b *testing.B) {
	kernels.SetThreads(runtime.GOMAXPROCS(0))
	cfg := Config{Vocab: 256, DModel: 128, NLayers: 4, NHeads: 4, NKVHeads: 4, MLPHidden: 384,
		SeqLen: 64, RopeTheta: 10000, NormEps: 1e-5, InitStd: 0.02, Tied: true}
	m, err := New(cfg, 1)
	if err != nil {
		b.Fatal(err)
	}
	const B = 6
	bt := benchBatch(cfg, B)
	m.ForwardBackward(bt, 1)
	b.ResetTimer()
	cpu0 := kernels.ProcessCPUSeconds()
	for i := 0; i < b.N; i++ {
		m.ZeroGrads()
		if _, err := m.ForwardBackward(bt, 1); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/1e3/float64(b.N), "ms/op")
	b.ReportMetric((kernels.ProcessCPUSeconds()-cpu0)*1e3/float64(b.N)/float64(kernels.Threads()), "cpu-ms/op")
}
