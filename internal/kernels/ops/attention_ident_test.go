package ops

import (
	"fmt"
	"math"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/kernels"
)

// TestAttentionBitIdentical runs Attention and refAttention (the
// implementation before the attention kernels, attention_ref_test.go) on
// the same inputs and requires the output, the saved probabilities, the
// vitals and the q/k/v gradients to be equal bit for bit, on 1 and 2
// threads: ref7m's shapes, the 124m preset's heads, grouped-query heads,
// a document mask, odd lengths and other row blocks.
func TestAttentionBitIdentical(t *testing.T) {
	saved := kernels.Threads()
	t.Cleanup(func() { kernels.SetThreads(saved) })
	type tc struct {
		B, T, H, KVH, HD int
		seg, scratch     bool
		block            int
	}
	cases := []tc{
		{8, 256, 4, 4, 64, false, true, 0},  // ref7m as the model runs it
		{8, 256, 4, 4, 64, false, false, 0}, // ref7m, scalar softmax
		{8, 256, 4, 4, 64, true, true, 0},   // ref7m with a document mask
		{2, 256, 12, 12, 64, false, true, 0},
		{2, 256, 8, 2, 64, true, true, 0}, // grouped-query heads
		{3, 100, 4, 2, 64, false, true, 0},
		{2, 77, 2, 1, 32, true, true, 0},
		{2, 131, 4, 4, 64, false, true, 56},
		{2, 70, 2, 2, 16, true, false, 2},
		{1, 300, 2, 1, 64, false, true, 0},
		{2, 5, 4, 2, 4, false, true, 0},
		{1, 1, 1, 1, 8, false, true, 0},
		{1, 1, 2, 1, 32, false, true, 0},
		{2, 9, 2, 2, 32, true, true, 0},
		{2, 90, 2, 1, 96, true, true, 0},
		{1, 129, 2, 2, 128, false, true, 0},
		{6, 64, 4, 4, 32, false, true, 0}, // shakespeare-char as the model runs it
		{3, 64, 4, 2, 32, true, true, 0},  // short context, grouped-query heads, documents
		{2, 37, 4, 4, 32, true, true, 0},  // T not a multiple of a tile
		{2, 64, 2, 2, 64, false, true, 0},
	}
	if testing.Short() {
		cases = cases[:4]
	}
	for i, c := range cases {
		for _, threads := range []int{1, 2} {
			name := fmt.Sprintf("B%d_T%d_H%d_KV%d_HD%d_seg%v_vec%v_bs%d_threads%d", c.B, c.T, c.H, c.KVH, c.HD, c.seg, c.scratch, c.block, threads)
			t.Run(name, func(t *testing.T) {
				kernels.SetThreads(threads)
				x := newAttnBench(c.B, c.T, c.H, c.KVH, c.HD, uint64(100+i), c.seg, c.scratch)
				x.a.Block = c.block
				ref := &refAttention{D: x.a.D, Seg: x.a.Seg, Block: c.block, Scratch: x.a.Scratch}
				// the reference on copies of the buffers; both start from
				// buffers full of NaNs where they are outputs
				out, att := nanVec(len(x.out)), nanVec(len(x.att))
				rowMax, rowEnt := nanVec(len(x.rowMax)), nanVec(len(x.rowEnt))
				dqkv, datt := nanVec(len(x.dqkv)), nanVec(len(x.datt))
				ref.Forward(out, att, x.qkv, rowMax, rowEnt)
				ref.Backward(dqkv, x.dout, x.qkv, att, datt)
				x.out, x.att, x.rowMax, x.rowEnt = nanVec(len(x.out)), nanVec(len(x.att)), nanVec(len(x.rowMax)), nanVec(len(x.rowEnt))
				x.dqkv, x.datt = nanVec(len(x.dqkv)), nanVec(len(x.datt))
				// twice: the second run reuses the state of the first
				for rep := 0; rep < 2; rep++ {
					x.step()
					sameBitsAll(t, "out", x.out, out)
					sameBitsAll(t, "att", x.att, att)
					sameBitsAll(t, "rowMax", x.rowMax, rowMax)
					sameBitsAll(t, "rowEnt", x.rowEnt, rowEnt)
					// dqkv holds q, k and v gradients in every column of qkv
					sameBitsAll(t, "dqkv", x.dqkv, dqkv)
				}
				sameForwardNoAtt(t, x, out, rowMax, rowEnt)
			})
		}
	}
}

func nanVec(n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(math.NaN())
	}
	return v
}

// sameBitsAll fails unless got and want are equal bit for bit.
func sameBitsAll(t *testing.T, what string, got, want []float32) {
	t.Helper()
	bad := 0
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			if bad < 5 {
				t.Errorf("%s[%d] = %g (%#x), want %g (%#x)", what, i, got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
			}
			bad++
		}
	}
	if bad > 0 {
		t.Errorf("%s: %d of %d differ", what, bad, len(want))
	}
}

// TestAttentionBitIdenticalImpls repeats a ref7m-shaped case of
// TestAttentionBitIdentical under every GEMM implementation this CPU runs
// (the tile path only stands in for the AVX-512 one; the others keep the
// Sgemm path).
func TestAttentionBitIdenticalImpls(t *testing.T) {
	saved := kernels.Threads()
	t.Cleanup(func() { kernels.SetThreads(saved) })
	for _, impl := range kernels.ImplsAvailable() {
		prev, err := kernels.UseImpl(impl)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(impl, func(t *testing.T) {
			for _, threads := range []int{1, 2} {
				kernels.SetThreads(threads)
				x := newAttnBench(2, 256, 4, 4, 64, 7, true, true)
				ref := &refAttention{D: x.a.D, Seg: x.a.Seg, Scratch: x.a.Scratch}
				out, att := nanVec(len(x.out)), nanVec(len(x.att))
				rowMax, rowEnt := nanVec(len(x.rowMax)), nanVec(len(x.rowEnt))
				dqkv, datt := nanVec(len(x.dqkv)), nanVec(len(x.datt))
				ref.Forward(out, att, x.qkv, rowMax, rowEnt)
				ref.Backward(dqkv, x.dout, x.qkv, att, datt)
				x.step()
				sameBitsAll(t, "out", x.out, out)
				sameBitsAll(t, "att", x.att, att)
				sameBitsAll(t, "rowMax", x.rowMax, rowMax)
				sameBitsAll(t, "rowEnt", x.rowEnt, rowEnt)
				sameBitsAll(t, "dqkv", x.dqkv, dqkv)
				sameForwardNoAtt(t, x, out, rowMax, rowEnt)
			}
		})
		if _, err := kernels.UseImpl(prev); err != nil {
			t.Fatal(err)
		}
	}
}

// sameForwardNoAtt runs x's forward without keeping the probabilities
// (att nil, as the forward-only path does) and checks out and the vitals
// against the reference's, then without the vitals (out alone).
func sameForwardNoAtt(t *testing.T, x *attnBench, out, rowMax, rowEnt []float32) {
	t.Helper()
	o, m, e := nanVec(len(out)), nanVec(len(rowMax)), nanVec(len(rowEnt))
	x.a.Forward(o, nil, x.qkv, m, e)
	sameBitsAll(t, "out (att nil)", o, out)
	sameBitsAll(t, "rowMax (att nil)", m, rowMax)
	sameBitsAll(t, "rowEnt (att nil)", e, rowEnt)
	// without vitals (the forward-only path): the same output
	o = nanVec(len(out))
	x.a.Forward(o, nil, x.qkv, nil, nil)
	sameBitsAll(t, "out (att nil, no vitals)", o, out)
}

// TestAttentionRoPEBackwardFused: Backward with RoPECos set equals
// Backward followed by a RoPEBackward pass over every query and key head
// of dqkv (the model's order before the fusion) bit for bit: on the tile
// path and the Sgemm path (HD 16), grouped-query heads, document masks,
// T not a multiple of a tile, 1 and 2 threads.
func TestAttentionRoPEBackwardFused(t *testing.T) {
	saved := kernels.Threads()
	t.Cleanup(func() { kernels.SetThreads(saved) })
	for i, c := range []struct {
		B, T, H, KVH, HD int
		seg              bool
	}{
		{6, 64, 4, 4, 32, false},
		{3, 64, 4, 2, 32, true},
		{2, 37, 4, 1, 32, true},
		{2, 70, 2, 2, 16, false},
		{1, 1, 2, 1, 32, false},
	} {
		for _, threads := range []int{1, 2} {
			kernels.SetThreads(threads)
			name := fmt.Sprintf("B%d_T%d_H%d_KV%d_HD%d_seg%v_threads%d", c.B, c.T, c.H, c.KVH, c.HD, c.seg, threads)
			x := newAttnBench(c.B, c.T, c.H, c.KVH, c.HD, uint64(40+i), c.seg, true)
			cos, sin := make([]float32, c.T*c.HD/2), make([]float32, c.T*c.HD/2)
			RoPETables(cos, sin, c.T, c.HD, 10000)
			x.a.Forward(x.out, x.att, x.qkv, x.rowMax, x.rowEnt)
			want := nanVec(len(x.dqkv))
			x.a.Backward(want, x.dout, x.qkv, x.att, x.datt)
			RoPEBackward(want, cos, sin, c.T, x.Stride, 0, c.H+c.KVH, c.HD, 0, c.B*c.T)
			got := nanVec(len(x.dqkv))
			x.a.RoPECos, x.a.RoPESin = cos, sin
			x.a.Backward(got, x.dout, x.qkv, x.att, x.datt)
			x.a.RoPECos, x.a.RoPESin = nil, nil
			sameBitsAll(t, name+" dqkv", got, want)
		}
	}
}
