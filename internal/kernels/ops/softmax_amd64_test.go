package ops

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestSoftmaxRowsFusedMatchesGo runs softmaxTask.block with the fused
// AVX-512 rows (softmaxRows512) and without them (runRow: maxRow,
// expShiftSum, kernels.Dot, scaleTo, one row at a time) on the same scores
// and requires the probabilities, the row maxima and the entropies to be
// equal bit for bit: every T from 1 to 65 (rows of 1–65 keys), with and
// without a document mask, with and without the entropy vital, scores
// holding −Inf entries, and rows the fused routine hands back (a NaN, a
// maximum of +0 or −0, ±Inf, all −Inf).
func TestSoftmaxRowsFusedMatchesGo(t *testing.T) {
	if !useSoftmax512 {
		t.Skip("no AVX-512")
	}
	r := rand.New(rand.NewPCG(3, 9))
	negInf := float32(math.Inf(-1))
	for T := 1; T <= 65; T++ {
		for _, docs := range []bool{false, true} {
			for _, ent := range []bool{false, true} {
				name := fmt.Sprintf("T%d_docs%v_ent%v", T, docs, ent)
				const H = 2
				S := make([]float32, H*T*T)
				for i := range S {
					S[i] = float32(r.NormFloat64() * 3)
					if r.IntN(9) == 0 {
						S[i] = negInf
					}
				}
				// rows the routine hands back, in head 1
				special := []func(row []float32){
					func(row []float32) { row[r.IntN(len(row))] = float32(math.NaN()) },
					func(row []float32) { clear(row) },
					func(row []float32) {
						for j := range row {
							row[j] = -float32(r.Float64()) - 0.5
						}
						row[r.IntN(len(row))] = float32(math.Copysign(0, -1))
					},
					func(row []float32) { row[r.IntN(len(row))] = float32(math.Inf(1)) },
					func(row []float32) {
						for j := range row {
							row[j] = negInf
						}
					},
				}
				for i, f := range special {
					if row := T - 1 - 3*i; row >= 0 {
						f(S[(T+row)*T : (T+row)*T+row+1])
					}
				}
				var seg []int32
				if docs {
					seg = make([]int32, T)
					for j := 1; j < T; j++ {
						seg[j] = seg[j-1]
						if r.IntN(7) == 0 {
							seg[j]++
						}
					}
				}
				run := func(fused bool) (att, rowMax, rowEnt []float32) {
					saved := useSoftmax512
					useSoftmax512 = fused
					defer func() { useSoftmax512 = saved }()
					att = append([]float32(nil), S...)
					rowMax, rowEnt = nanVec(H*T), nanVec(H*T)
					k := softmaxTask{att: att, T: T, H: H, seg: seg, rowMax: rowMax, scratch: make([]float32, H*T)}
					if ent {
						k.rowEnt = rowEnt
					}
					for bh := 0; bh < H; bh++ {
						k.block(att[bh*T*T:], bh, seg)
					}
					return att, rowMax, rowEnt
				}
				t.Run(name, func(t *testing.T) {
					att, mx, en := run(true)
					watt, wmx, wen := run(false)
					sameBitsAll(t, "att", att, watt)
					sameBitsAll(t, "rowMax", mx, wmx)
					sameBitsAll(t, "rowEnt", en, wen)
				})
			}
		}
	}
}

// TestSoftmaxBackFusedMatchesGo runs softmaxBackTask.Run over whole
// (b, h) blocks with the fused rows (blockFused: dsRows512) and without
// (row by row: dotRows8, dot1, dsRow, clear) and requires dS equal bit
// for bit, past the diagonal included: every T from 1 to 65, both zero
// widths (all of a row past its diagonal, and the tiles' maxTileRows), a
// block that starts at a row other than 0.
func TestSoftmaxBackFusedMatchesGo(t *testing.T) {
	if !useSoftmax512 {
		t.Skip("no AVX-512")
	}
	r := rand.New(rand.NewPCG(5, 11))
	for T := 1; T <= 65; T++ {
		for _, zeros := range []int{0, maxTileRows} {
			const H = 2
			att := make([]float32, H*T*T)
			dp := make([]float32, H*T*T)
			for i := range att {
				att[i] = float32(r.Float64())
				dp[i] = float32(r.NormFloat64())
				if r.IntN(13) == 0 {
					dp[i] = float32(math.NaN())
				}
			}
			run := func(fused bool) []float32 {
				saved := useSoftmax512
				useSoftmax512 = fused
				defer func() { useSoftmax512 = saved }()
				d := append([]float32(nil), dp...)
				k := softmaxBackTask{datt: d, att: att, T: T, zeros: zeros}
				k.Run(T, 2*T) // the second pair's block
				return d
			}
			t.Run(fmt.Sprintf("T%d_zeros%d", T, zeros), func(t *testing.T) {
				sameBitsAll(t, "dS", run(true), run(false))
			})
		}
	}
}
