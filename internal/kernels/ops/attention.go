package ops

import (
	"math"

	"github.com/kestrel-lm/kestrel/internal/kernels"
)

// AttnDims describes causal self-attention over a packed qkv buffer: row
// n = b·T+t of qkv holds H query heads at column QOff, KVH key heads at
// KOff and KVH value heads at VOff, each HD wide, with row stride Stride.
// The output row n holds H heads of HD at row stride OutStride.
type AttnDims struct {
	B, T, H, KVH, HD int
	Stride           int
	QOff, KOff, VOff int
	OutStride        int
}

// Attention is causal multi-head attention with grouped-query heads (query
// head h reads key/value head h/(H/KVH)) and an optional intra-document
// mask. Per (b, h), with scale s = 1/√HD:
//
//	S = s·Q·Kᵀ,   P = softmax(S + mask) row-wise,   O = P·V
//
// where mask_tj = 0 if j ≤ t and seg_j = seg_t (or no Seg), −∞ otherwise.
// Backward:
//
//	dP = dO·Vᵀ,  dS = P ⊙ (dP − rowsum(P⊙dP)),
//	dQ = s·dS·K,  dK += s·dSᵀ·Q,  dV += Pᵀ·dO
//
// (the sums over the heads sharing a K/V head give the GQA gradient). The
// products run as SGEMMs on row blocks of Block queries, skipping key
// blocks entirely above the diagonal, or, when the CPU and the GEMM
// implementation are AVX-512 and HD is a multiple of 32, tile by tile on
// the kernels of attn_amd64.s (attn_tiles.go), with bit-identical results:
// dK and dV are summed block by block of Block queries either way. The
// (b, h) pairs, or (b, kv-head) groups backward, run in parallel.
type Attention struct {
	D     AttnDims
	Seg   []int32 // [B*T] segment ids, or nil for plain causal attention
	Block int     // query rows per GEMM block (0 = 64)
	// Scratch [B*H*T], optional: with it the unmasked softmax rows use the
	// vectorised exponential.
	Scratch []float32
	// Prec is the products' arithmetic: BF16 runs them on kernels.SgemmBF16
	// (never on the float32 tiles); the softmax and its statistics stay
	// float32.
	Prec Precision
	// RoPECos, RoPESin [T, HD/2], optional: the rotation RoPEForward
	// applied to the query and key heads before Forward (positions n mod
	// T). With them, Backward returns the gradient before the rotation:
	// RoPEBackward on each (b, kv-head) group's dQ and dK rows as its task
	// ends, while they are in cache (the same bits as a RoPEBackward pass
	// over dqkv after Backward, without that pass).
	RoPECos, RoPESin []float32

	sm  softmaxTask
	smb softmaxBackTask
	fwd attnFwdTask
	bwd attnBwdTask
}

// tiles reports whether the products run on the AVX-512 tile kernels
// (attn_amd64.s) instead of kernels.Sgemm: when the CPU has them, Sgemm
// runs its AVX-512 micro-kernel (whose sums the tiles repeat bit for bit)
// and the head width is a multiple of 32.
func (a *Attention) tiles() bool {
	return a.Prec == FP32 && attnAVX512 && kernels.Impl() == "avx512" && a.D.HD%32 == 0
}

func (a *Attention) block() int {
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
// rowMax[r] and the attention entropy (nats) in rowEnt[r] (both nil: no
// vitals, and the entropy's sums are skipped). The (b, h) pairs
// run in parallel, each with its GEMMs and softmax rows on one thread.
// With att nil (forward-only passes) the probabilities are not kept: each
// (b, h) pair's T×T block goes through a buffer of the worker's that stays
// in cache, with the same results.
func (a *Attention) Forward(out, att, qkv, rowMax, rowEnt []float32) {
	a.fwd = attnFwdTask{a: a, out: out, att: att, qkv: qkv}
	a.sm = softmaxTask{att: att, T: a.D.T, H: a.D.H, seg: a.Seg, rowMax: rowMax, rowEnt: rowEnt, scratch: a.Scratch}
	kernels.ParallelForTask(a.D.B*a.D.H, 1, &a.fwd)
	a.fwd = attnFwdTask{}
}

// Backward overwrites dqkv (layout of qkv) with the gradient of the q, k and
// v heads given dout; datt is scratch of the size of att (left holding dS
// on and below the diagonal; what it holds above is unspecified). The
// (b, kv-head) groups run in parallel (their query heads accumulate into
// one dK, dV). With RoPECos, dQ and dK are rotated back (see RoPECos).
func (a *Attention) Backward(dqkv, dout, qkv, att, datt []float32) {
	a.bwd = attnBwdTask{a: a, dqkv: dqkv, dout: dout, qkv: qkv, att: att, datt: datt}
	a.smb = softmaxBackTask{datt: datt, att: att, T: a.D.T}
	if a.tiles() {
		// the tiles read dS at most maxTileRows−1 entries past the diagonal
		a.smb.zeros = maxTileRows
	}
	kernels.ParallelForTask(a.D.B*a.D.KVH, 1, &a.bwd)
	a.bwd = attnBwdTask{}
}

type attnFwdTask struct {
	a             *Attention
	out, att, qkv []float32
}

// scoreBuf returns, when att is nil, a buffer of the worker's for one
// (b, h) pair's T×T scores (give it back with putBuf), else nil.
func (k *attnFwdTask) scoreBuf() []float32 {
	if k.att != nil {
		return nil
	}
	return getBuf(k.a.D.T * k.a.D.T)
}

// scores is where the scores of pair bh go: its block of att, or buf.
func (k *attnFwdTask) scores(buf []float32, bh int) []float32 {
	if k.att == nil {
		return buf
	}
	T := k.a.D.T
	return k.att[bh*T*T:]
}

func (k *attnFwdTask) Run(s, e int) {
	if k.a.tiles() {
		k.runTiles(s, e)
		return
	}
	a := k.a
	d := a.D
	T, hd := d.T, d.HD
	scale := float32(1 / math.Sqrt(float64(hd)))
	group := d.H / d.KVH
	bs := a.block()
	buf := k.scoreBuf()
	defer putBuf(buf)
	for bh := s; bh < e; bh++ {
		b, h := bh/d.H, bh%d.H
		kv := h / group
		base := b * T * d.Stride
		S := k.scores(buf, bh)
		for r0 := 0; r0 < T; r0 += bs {
			r1 := min(r0+bs, T)
			a.Prec.Sgemm(false, true, r1-r0, r1, hd, scale,
				k.qkv[base+r0*d.Stride+d.QOff+h*hd:], d.Stride,
				k.qkv[base+d.KOff+kv*hd:], d.Stride,
				0, S[r0*T:], T)
		}
		a.sm.block(S, bh, a.docRuns(b))
		for r0 := 0; r0 < T; r0 += bs {
			r1 := min(r0+bs, T)
			a.Prec.Sgemm(false, false, r1-r0, hd, r1, 1,
				S[r0*T:], T,
				k.qkv[base+d.VOff+kv*hd:], d.Stride,
				0, k.out[(b*T+r0)*d.OutStride+h*hd:], d.OutStride)
		}
	}
}

type attnBwdTask struct {
	a                          *Attention
	dqkv, dout, qkv, att, datt []float32
}

func (k *attnBwdTask) Run(s, e int) {
	if k.a.tiles() {
		k.runTiles(s, e)
		return
	}
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
				a.Prec.Sgemm(false, true, r1-r0, r1, hd, 1,
					dO[r0*d.OutStride:], d.OutStride,
					k.qkv[base+d.VOff+kv*hd:], d.Stride,
					0, dS[r0*T:], T)
			}
			a.smb.Run(bh*T, (bh+1)*T)
			for r0 := 0; r0 < T; r0 += bs {
				r1 := min(r0+bs, T)
				m := r1 - r0
				// dQ[r0:r1] = s·dS[r0:r1, 0:r1]·K[0:r1]
				a.Prec.Sgemm(false, false, m, hd, r1, scale,
					dS[r0*T:], T, k.qkv[base+d.KOff+kv*hd:], d.Stride,
					0, k.dqkv[base+r0*d.Stride+d.QOff+h*hd:], d.Stride)
				// dK[0:r1] += s·dS[r0:r1, 0:r1]ᵀ·Q[r0:r1]
				a.Prec.Sgemm(true, false, r1, hd, m, scale,
					dS[r0*T:], T, k.qkv[base+r0*d.Stride+d.QOff+h*hd:], d.Stride,
					1, k.dqkv[base+d.KOff+kv*hd:], d.Stride)
				// dV[0:r1] += P[r0:r1, 0:r1]ᵀ·dO[r0:r1]
				a.Prec.Sgemm(true, false, r1, hd, m, 1,
					P[r0*T:], T, dO[r0*d.OutStride:], d.OutStride,
					1, k.dqkv[base+d.VOff+kv*hd:], d.Stride)
			}
		}
		a.ropeBack(k.dqkv, b, kv)
	}
}

// ropeBack applies RoPEBackward to the dQ heads of group (b, kv) and its
// dK head, over sequence b's rows (none without RoPECos).
func (a *Attention) ropeBack(dqkv []float32, b, kv int) {
	if a.RoPECos == nil {
		return
	}
	d := a.D
	group := d.H / d.KVH
	r0, r1 := b*d.T, (b+1)*d.T
	RoPEBackward(dqkv, a.RoPECos, a.RoPESin, d.T, d.Stride, d.QOff+kv*group*d.HD, group, d.HD, r0, r1)
	RoPEBackward(dqkv, a.RoPECos, a.RoPESin, d.T, d.Stride, d.KOff+kv*d.HD, 1, d.HD, r0, r1)
}

// softmaxTask: masked softmax over attention rows r = (b·H+h)·T+t, in place,
// with per-row vitals. Entropy = lse − Σ_j p_j·s_j.
type softmaxTask struct {
	att            []float32
	T, H           int
	seg            []int32
	rowMax, rowEnt []float32
	scratch        []float32 // [B*H*T] or nil
}

// block runs the softmax over the T rows of the (b, h) pair bh, whose
// scores are in S [T × T]; docs is Attention.docRuns of the pair's
// sequence. With a scratch buffer, a row whose allowed keys are one run
// j ∈ [lo, t] — every row without Seg, and with Seg every row when docs
// is set (documents packed one after another: the keys of row t are those
// from its document's first position on) — takes the vectorised
// exponential; rows of other masks take the scalar loop.
func (k *softmaxTask) block(S []float32, bh int, docs []int32) {
	T := k.T
	b := bh / k.H
	var seg []int32
	if k.seg != nil {
		seg = k.seg[b*T : (b+1)*T]
	}
	runs := k.scratch != nil && (seg == nil || docs != nil)
	if runs && useSoftmax512 && T <= 64 {
		k.blockFused(S, bh, seg)
		return
	}
	lo := 0 // first allowed key of row t when runs
	var ent entropyRows
	for r := bh * T; r < (bh+1)*T; r++ {
		t := r % T
		row := S[t*T : (t+1)*T]
		var st int32
		if seg != nil {
			st = seg[t]
			if t > 0 && st != seg[t-1] {
				lo = t
			}
		}
		if runs {
			mx, sum, ps := k.runRow(row, lo, t, bh)
			if k.rowEnt != nil {
				k.rowMax[r] = mx
				ent.add(k.rowMax, k.rowEnt, r, sum, ps)
			}
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
		if k.rowEnt != nil {
			lse := mx + float32(math.Log(float64(sum)))
			k.rowMax[r] = mx
			k.rowEnt[r] = lse - ps*inv
		}
	}
	ent.flush(k.rowMax, k.rowEnt)
}

// runRow is the softmax of row t (its T scores) over its keys j ∈ [lo, t]
// with the vectorised exponential: e^(s−max) into scratch, the entropy's
// Σ e·s (only with rowEnt), then the row normalised and 0 outside [lo, t].
// It returns the maximum, Σ e and Σ e·s / Σ e.
func (k *softmaxTask) runRow(row []float32, lo, t, bh int) (mx, sum, ps float32) {
	T := k.T
	v := row[lo : t+1]
	mx = maxRow(v)
	ex := k.scratch[bh*T+lo : bh*T+t+1]
	sum = expShiftSum(ex, v, mx)
	inv := 1 / sum
	if k.rowEnt != nil {
		ps = kernels.Dot(ex, v) * inv
	}
	scaleTo(v, ex, inv)
	clear(row[:lo])
	clear(row[t+1:])
	return mx, sum, ps
}

// softmaxRowStats holds what softmaxRows512 returns per row of a block.
type softmaxRowStats struct {
	mx, sum, ps [64]float32
}

// blockFused is block's runs path for T ≤ 64 on softmaxRows512: the rows
// in one routine, a row it leaves (a NaN, or a maximum of ±0 or ±Inf)
// through runRow, then the entropies eight rows at a time (entropyRows).
func (k *softmaxTask) blockFused(S []float32, bh int, seg []int32) {
	T := k.T
	var los [64]int32
	if seg != nil {
		lo := 0
		for t := 1; t < T; t++ {
			if seg[t] != seg[t-1] {
				lo = t
			}
			los[t] = int32(lo)
		}
	}
	var st softmaxRowStats
	ent := k.rowEnt != nil
	for t := 0; t < T; {
		t = softmaxRowsFused(S, T, t, &los, &st, ent)
		if t < T {
			st.mx[t], st.sum[t], st.ps[t] = k.runRow(S[t*T:(t+1)*T], int(los[t]), t, bh)
			t++
		}
	}
	if !ent {
		return
	}
	copy(k.rowMax[bh*T:(bh+1)*T], st.mx[:T])
	var er entropyRows
	for t := range T {
		er.add(k.rowMax, k.rowEnt, bh*T+t, st.sum[t], st.ps[t])
	}
	er.flush(k.rowMax, k.rowEnt)
}

// entropyRows gathers the entropies of up to 8 softmax rows, rowEnt[r] =
// rowMax[r] + ln(sum) − Σp·s, to take their logs eight at a time (log8;
// math.Log one row at a time cost as much as the row's exponentials at
// T = 64): the same float32 expression, so the same bits.
type entropyRows struct {
	n    int
	rows [8]int
	sum  [8]float64
	ps   [8]float32 // Σ p·s (ps·inv, rounded)
	ln   [8]float64
}

// add queues row r (its rowMax already written); a full batch is written.
func (e *entropyRows) add(rowMax, rowEnt []float32, r int, sum, ps float32) {
	e.rows[e.n], e.sum[e.n], e.ps[e.n] = r, float64(sum), ps
	e.n++
	if e.n == 8 {
		e.flush(rowMax, rowEnt)
	}
}

// flush writes the queued rows' entropies.
func (e *entropyRows) flush(rowMax, rowEnt []float32) {
	if e.n == 0 {
		return
	}
	for i := e.n; i < 8; i++ {
		e.sum[i] = 1
	}
	log8(&e.sum, &e.ln)
	for i, r := range e.rows[:e.n] {
		rowEnt[r] = rowMax[r] + float32(e.ln[i]) - e.ps[i]
	}
	e.n = 0
}

// nonDecreasing reports whether seg[i] ≤ seg[i+1] everywhere.
func nonDecreasing(seg []int32) bool {
	for i := 1; i < len(seg); i++ {
		if seg[i] < seg[i-1] {
			return false
		}
	}
	return true
}

// softmaxBackTask: dS = P ⊙ (dP − Σ P⊙dP) in place in datt, per row.
// Each row's Σ P⊙dP is one sequential sum over j; eight rows are summed
// side by side (independent chains, each in its own order, so the result
// is the same as row by row), which hides the latency of the adds.
type softmaxBackTask struct {
	datt, att []float32
	T         int
	zeros     int // entries set to 0 past the diagonal of a row (0 = all)
}

func (k *softmaxBackTask) Run(s, e int) {
	T := k.T
	if useSoftmax512 && T <= 64 && s%T == 0 && e-s == T {
		k.blockFused(s)
		return
	}
	var sums [8]float32
	r := s
	for r < e {
		t := r % T
		if r+8 > e || t+8 > T {
			k.row(r, t, k.dot1(r, t))
			r++
			continue
		}
		k.dots8(r, t, &sums)
		for i := range 8 {
			k.row(r+i, t+i, sums[i])
		}
		r += 8
	}
}

// dots8 is Σ P⊙dP of rows r … r+7 (causal positions t … t+7, so t+1 …
// t+8 entries): the shared first t+1 side by side (dotRows8), then each
// row's tail added in order.
func (k *softmaxBackTask) dots8(r, t int, sums *[8]float32) {
	T, n := k.T, t+1
	dotRows8(k.att[r*T:], k.datt[r*T:], T, n, sums)
	for i := 1; i < 8; i++ {
		o := (r+i)*T + n
		dot := sums[i]
		for j := 0; j < i; j++ {
			dot += k.att[o+j] * k.datt[o+j]
		}
		sums[i] = dot
	}
}

// blockFused is Run over the T ≤ 64 rows of one (b, h) pair from row s:
// the rows' Σ P⊙dP as Run sums them (dotRows8 side by side, dot1), then
// dS and the zeros of every row in one AVX-512 routine (dsRows512: the
// same subtraction and product per element as dsRow).
func (k *softmaxBackTask) blockFused(s int) {
	T := k.T
	var dots [64]float32
	var sums [8]float32
	for t := 0; t < T; {
		r := s + t
		if t+8 > T {
			dots[t] = k.dot1(r, t)
			t++
			continue
		}
		k.dots8(r, t, &sums)
		copy(dots[t:t+8], sums[:])
		t += 8
	}
	dsRowsFused(k.datt[s*T:s*T+T*T], k.att[s*T:s*T+T*T], T, &dots, k.zeros)
}

// dot1 is Σ_j≤t P⊙dP of row r.
func (k *softmaxBackTask) dot1(r, t int) float32 {
	T := k.T
	p := k.att[r*T : r*T+t+1]
	dp := k.datt[r*T:][:len(p)]
	var dot float32
	for j, pv := range p {
		dot += pv * dp[j]
	}
	return dot
}

// row writes dS = P ⊙ (dP − dot) over row r's first t+1 entries and 0
// past them.
func (k *softmaxBackTask) row(r, t int, dot float32) {
	T := k.T
	p := k.att[r*T : r*T+t+1]
	dp := k.datt[r*T : (r+1)*T]
	dsRow(dp[:t+1], p, dot)
	if k.zeros > 0 {
		dp = dp[:min(T, t+1+k.zeros)]
	}
	clear(dp[t+1:])
}
