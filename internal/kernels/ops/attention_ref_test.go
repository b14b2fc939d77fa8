package ops

import (
	"math"

	"github.com/kestrel-lm/kestrel/internal/kernels"
)

// refAttention is a copy of Attention as it was before the attention
// kernels (commit c5ae2e9): the reference the bit-identity tests compare
// the current implementation with. Only the names differ, and the masked
// softmax rows follow the current ones (refSoftmaxTask).
type refAttention struct {
	D       AttnDims
	Seg     []int32
	Block   int
	Scratch []float32

	sm  refSoftmaxTask
	smb refSoftmaxBackTask
	fwd refAttnFwdTask
	bwd refAttnBwdTask
}

func (a *refAttention) block() int {
	bs := a.Block
	if bs <= 0 {
		bs = 64
	}
	if bs > a.D.T {
		bs = a.D.T
	}
	return bs
}

// Forward computes out [B*T, OutStride] and saves the probabilities in att
// [B, H, T, T] (entries above the diagonal or across documents are 0). For
// each query row r = (b·H+h)·T+t it stores the max pre-softmax logit in
// rowMax[r] and the attention entropy (nats) in rowEnt[r]. The (b, h) pairs
// run in parallel, each with its GEMMs and softmax rows on one thread.
func (a *refAttention) Forward(out, att, qkv, rowMax, rowEnt []float32) {
	a.fwd = refAttnFwdTask{a: a, out: out, att: att, qkv: qkv}
	a.sm = refSoftmaxTask{att: att, T: a.D.T, H: a.D.H, seg: a.Seg, rowMax: rowMax, rowEnt: rowEnt, scratch: a.Scratch}
	kernels.ParallelForTask(a.D.B*a.D.H, 1, &a.fwd)
	a.fwd = refAttnFwdTask{}
}

// Backward overwrites dqkv (layout of qkv) with the gradient of the q, k and
// v heads given dout; datt is scratch of the size of att. The (b, kv-head)
// groups run in parallel (their query heads accumulate into one dK, dV).
func (a *refAttention) Backward(dqkv, dout, qkv, att, datt []float32) {
	a.bwd = refAttnBwdTask{a: a, dqkv: dqkv, dout: dout, qkv: qkv, att: att, datt: datt}
	a.smb = refSoftmaxBackTask{datt: datt, att: att, T: a.D.T}
	kernels.ParallelForTask(a.D.B*a.D.KVH, 1, &a.bwd)
	a.bwd = refAttnBwdTask{}
}

type refAttnFwdTask struct {
	a             *refAttention
	out, att, qkv []float32
}

func (k *refAttnFwdTask) Run(s, e int) {
	a := k.a
	d := a.D
	T, hd := d.T, d.HD
	scale := float32(1 / math.Sqrt(float64(hd)))
	group := d.H / d.KVH
	bs := a.block()
	for bh := s; bh < e; bh++ {
		b, h := bh/d.H, bh%d.H
		kv := h / group
		base := b * T * d.Stride
		S := k.att[bh*T*T:]
		for r0 := 0; r0 < T; r0 += bs {
			r1 := min(r0+bs, T)
			kernels.Sgemm(false, true, r1-r0, r1, hd, scale,
				k.qkv[base+r0*d.Stride+d.QOff+h*hd:], d.Stride,
				k.qkv[base+d.KOff+kv*hd:], d.Stride,
				0, S[r0*T:], T)
		}
		a.sm.Run(bh*T, (bh+1)*T)
		for r0 := 0; r0 < T; r0 += bs {
			r1 := min(r0+bs, T)
			kernels.Sgemm(false, false, r1-r0, hd, r1, 1,
				S[r0*T:], T,
				k.qkv[base+d.VOff+kv*hd:], d.Stride,
				0, k.out[(b*T+r0)*d.OutStride+h*hd:], d.OutStride)
		}
	}
}

type refAttnBwdTask struct {
	a                          *refAttention
	dqkv, dout, qkv, att, datt []float32
}

func (k *refAttnBwdTask) Run(s, e int) {
	a := k.a
	d := a.D
	T, hd := d.T, d.HD
	scale := float32(1 / math.Sqrt(float64(hd)))
	group := d.H / d.KVH
	bs := a.block()
	for bk := s; bk < e; bk++ {
		b, kv := bk/d.KVH, bk%d.KVH
		base := b * T * d.Stride
		for r := b * T; r < (b+1)*T; r++ {
			o := r*d.Stride + d.KOff + kv*hd
			clear(k.dqkv[o : o+hd])
			o = r*d.Stride + d.VOff + kv*hd
			clear(k.dqkv[o : o+hd])
		}
		for h := kv * group; h < (kv+1)*group; h++ {
			bh := b*d.H + h
			dS := k.datt[bh*T*T:]
			P := k.att[bh*T*T:]
			dO := k.dout[b*T*d.OutStride+h*hd:]
			// dP[r0:r1, 0:r1] = dO[r0:r1]·V[0:r1]ᵀ
			for r0 := 0; r0 < T; r0 += bs {
				r1 := min(r0+bs, T)
				kernels.Sgemm(false, true, r1-r0, r1, hd, 1,
					dO[r0*d.OutStride:], d.OutStride,
					k.qkv[base+d.VOff+kv*hd:], d.Stride,
					0, dS[r0*T:], T)
			}
			a.smb.Run(bh*T, (bh+1)*T)
			for r0 := 0; r0 < T; r0 += bs {
				r1 := min(r0+bs, T)
				m := r1 - r0
				// dQ[r0:r1] = s·dS[r0:r1, 0:r1]·K[0:r1]
				kernels.Sgemm(false, false, m, hd, r1, scale,
					dS[r0*T:], T, k.qkv[base+d.KOff+kv*hd:], d.Stride,
					0, k.dqkv[base+r0*d.Stride+d.QOff+h*hd:], d.Stride)
				// dK[0:r1] += s·dS[r0:r1, 0:r1]ᵀ·Q[r0:r1]
				kernels.Sgemm(true, false, r1, hd, m, scale,
					dS[r0*T:], T, k.qkv[base+r0*d.Stride+d.QOff+h*hd:], d.Stride,
					1, k.dqkv[base+d.KOff+kv*hd:], d.Stride)
				// dV[0:r1] += P[r0:r1, 0:r1]ᵀ·dO[r0:r1]
				kernels.Sgemm(true, false, r1, hd, m, 1,
					P[r0*T:], T, dO[r0*d.OutStride:], d.OutStride,
					1, k.dqkv[base+d.VOff+kv*hd:], d.Stride)
			}
		}
	}
}

// refSoftmaxTask: masked softmax over attention rows r = (b·H+h)·T+t, in place,
// with per-row vitals. Entropy = lse − Σ_j p_j·s_j.
type refSoftmaxTask struct {
	att            []float32
	T, H           int
	seg            []int32
	rowMax, rowEnt []float32
	scratch        []float32 // [B*H*T] or nil
}

func (k *refSoftmaxTask) Run(s, e int) {
	T := k.T
	for r := s; r < e; r++ {
		t := r % T
		b := r / T / k.H
		row := k.att[r*T : (r+1)*T]
		var seg []int32
		var st int32
		if k.seg != nil {
			seg = k.seg[b*T : (b+1)*T]
			st = seg[t]
		}
		// Since the masked rows' change (one run of keys from the
		// document's first position when the ids never decrease), the
		// vector rows of the current implementation; lo is found by
		// scanning back here, row by row.
		lo := 0
		if seg != nil {
			lo = t
			for lo > 0 && seg[lo-1] == st {
				lo--
			}
		}
		if k.scratch != nil && (seg == nil || nonDecreasing(seg)) {
			// e^(s−max) into scratch, entropy from Σ e·s, then normalise
			v := row[lo : t+1]
			mx := maxRow(v)
			ex := k.scratch[(r/T)*T+lo : (r/T)*T+t+1]
			sum := expShiftSum(ex, v, mx)
			ps := kernels.Dot(ex, v)
			inv := 1 / sum
			scaleTo(v, ex, inv)
			clear(row[:lo])
			clear(row[t+1:])
			k.rowMax[r] = mx
			k.rowEnt[r] = mx + float32(math.Log(float64(sum))) - ps*inv
			continue
		}
		mx := row[t]
		for j := 0; j < t; j++ {
			if seg != nil && seg[j] != st {
				continue
			}
			if row[j] > mx {
				mx = row[j]
			}
		}
		var sum, ps float32
		for j := 0; j <= t; j++ {
			if seg != nil && seg[j] != st {
				row[j] = 0
				continue
			}
			v := row[j]
			// e^(v−mx), inlined expCore
			dd := max(v-mx, -87)
			q := dd*log2e + expMagic
			kf := q - expMagic
			r := dd - kf*ln2hi - kf*ln2lo
			pp := ((((((r*(1.0/5040)+1.0/720)*r+1.0/120)*r+1.0/24)*r+1.0/6)*r+0.5)*r+1)*r + 1
			ex := pp * math.Float32frombits(uint32(int32(math.Float32bits(q))-0x4B400000+127)<<23)
			sum += ex
			ps += ex * v
			row[j] = ex
		}
		inv := 1 / sum
		for j := 0; j <= t; j++ {
			row[j] *= inv
		}
		clear(row[t+1:])
		lse := mx + float32(math.Log(float64(sum)))
		k.rowMax[r] = mx
		k.rowEnt[r] = lse - ps*inv
	}
}

// refSoftmaxBackTask: dS = P ⊙ (dP − Σ P⊙dP) in place in datt, per row.
type refSoftmaxBackTask struct {
	datt, att []float32
	T         int
}

func (k *refSoftmaxBackTask) Run(s, e int) {
	T := k.T
	for r := s; r < e; r++ {
		t := r % T
		p := k.att[r*T : r*T+t+1]
		dp := k.datt[r*T : (r+1)*T]
		var dot float32
		for j, pv := range p {
			dot += pv * dp[j]
		}
		for j, pv := range p {
			dp[j] = pv * (dp[j] - dot)
		}
		clear(dp[t+1:])
	}
}
