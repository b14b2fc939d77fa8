package ops

import (
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/kernels"
)

// attnBench is one layer's attention buffers for a benchmark or test.
type attnBench struct {
	a                                   *Attention
	qkv, dout, out, att, datt, dqkv     []float32
	rowMax, rowEnt                      []float32
	B, T, H, KVH, HD, Stride, OutStride int
}

// newAttnBench builds an Attention on B sequences of T tokens with H query
// heads, KVH key/value heads of HD, laid out as the model lays out qkv
// (q heads, then k, then v) with random inputs from seed. With seg, the
// sequences are cut into documents (a document mask); with scratch, the
// vectorised softmax path is used (as the model does).
func newAttnBench(B, T, H, KVH, HD int, seed uint64, seg, scratch bool) *attnBench {
	r := rand.New(rand.NewPCG(seed, 7))
	stride := (H + 2*KVH) * HD
	d := AttnDims{B: B, T: T, H: H, KVH: KVH, HD: HD, Stride: stride,
		QOff: 0, KOff: H * HD, VOff: (H + KVH) * HD, OutStride: H * HD}
	a := &Attention{D: d}
	if seg {
		s := make([]int32, B*T)
		for b := 0; b < B; b++ {
			id := int32(0)
			for t := 0; t < T; t++ {
				if t > 0 && r.IntN(40) == 0 {
					id++
				}
				s[b*T+t] = id
			}
		}
		a.Seg = s
	}
	if scratch {
		a.Scratch = make([]float32, B*H*T)
	}
	N := B * T
	return &attnBench{a: a,
		qkv: randVec(r, N*stride, 1.5), dout: randVec(r, N*d.OutStride, 1),
		out: make([]float32, N*d.OutStride), att: make([]float32, B*H*T*T), datt: make([]float32, B*H*T*T),
		dqkv: make([]float32, N*stride), rowMax: make([]float32, B*H*T), rowEnt: make([]float32, B*H*T),
		B: B, T: T, H: H, KVH: KVH, HD: HD, Stride: stride, OutStride: d.OutStride}
}

func (x *attnBench) step() {
	x.a.Forward(x.out, x.att, x.qkv, x.rowMax, x.rowEnt)
	x.a.Backward(x.dqkv, x.dout, x.qkv, x.att, x.datt)
}

func benchAttention(b *testing.B, B, T, H, KVH, HD int) {
	kernels.SetThreads(runtime.GOMAXPROCS(0))
	x := newAttnBench(B, T, H, KVH, HD, 1, false, true)
	x.step()
	b.ResetTimer()
	cpu0 := kernels.ProcessCPUSeconds()
	for i := 0; i < b.N; i++ {
		x.step()
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/1e3/float64(b.N), "ms/op")
	// CPU time over threads: on a shared machine, less disturbed by
	// processes that take turns on the cores than the wall time
	b.ReportMetric((kernels.ProcessCPUSeconds()-cpu0)*1e3/float64(b.N)/float64(kernels.Threads()), "cpu-ms/op")
}

// BenchmarkAttentionRef7m times one forward and backward of one attention
// layer of ref7m (8 sequences of 256 tokens, 4 heads of 64, qkv row stride
// 768), with the vectorised softmax as the model runs it. Run with
// -test.cpu 1,2 for both thread counts.
func BenchmarkAttentionRef7m(b *testing.B) { benchAttention(b, 8, 256, 4, 4, 64) }

// BenchmarkAttention124m is BenchmarkAttentionRef7m on the 124m preset's
// shapes (4 sequences of 256 tokens, 12 heads of 64).
func BenchmarkAttention124m(b *testing.B) { benchAttention(b, 4, 256, 12, 12, 64) }

// BenchmarkAttentionShakespeare is BenchmarkAttentionRef7m on the
// shakespeare-char shapes (6 sequences of 64 tokens, 4 heads of 32): the
// short-context case, where the work around the products dominates.
func BenchmarkAttentionShakespeare(b *testing.B) { benchAttention(b, 6, 64, 4, 4, 32) }
