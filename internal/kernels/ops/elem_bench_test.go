package ops

import (
	"fmt"
	"testing"
)

// BenchmarkSigmoidRow times sigmoidRow on one layer of ref7m's gate
// (2,048 × 768 floats) with warm buffers (one pair, reused: in L3) and
// cold ones (8 pairs, 100 MB in turn: the destination's lines come from
// memory, as the activation arena's do in a training step). Run with
// -test.cpu 1.
func BenchmarkSigmoidRow(b *testing.B) {
	const n = 2048 * 768
	for _, bufs := range []int{1, 8} {
		b.Run(fmt.Sprintf("buffers=%d", bufs), func(b *testing.B) {
			src, dst := make([][]float32, bufs), make([][]float32, bufs)
			for j := range src {
				src[j], dst[j] = make([]float32, n), make([]float32, n)
				for i := range src[j] {
					src[j][i] = float32(i%97-48) * 0.1
				}
			}
			b.SetBytes(8 * n)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				sigmoidRow(dst[i%bufs], src[i%bufs])
			}
		})
	}
}
