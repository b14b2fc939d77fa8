package model

// The KV-cache decoder as it was before BatchDecoder (one sequence, every
// layer over every new row), kept as the reference the batched decoder must
// match bit for bit (decode_test.go).

import (
	"errors"
	"fmt"
	"math"

	"github.com/kestrel-lm/kestrel/internal/kernels"
	"github.com/kestrel-lm/kestrel/internal/kernels/ops"
)

// Decoder generates with a KV cache: it keeps every layer's keys (after
// QK-norm and RoPE at their absolute position) and values for the tokens
// fed so far, so each new token costs one row through every block plus its
// attention over the cache, instead of a forward pass over the whole
// context as Model.Logits does. It reads its Model's parameters (a change
// to them makes the cache stale: Reset) and is not safe for concurrent
// use; it shares nothing else with the Model, so Forward and LogProbs may
// run between its calls.
type refDecoder struct {
	m      *Model
	maxLen int
	n      int         // tokens in the cache
	k, v   [][]float32 // [layer][maxLen·n_kv_heads·head_dim]

	x, ln, qkvRaw, qkv, atty, gu, h, sig []float32 // [decRows, ·]
	rstd, qnRstd, knRstd, lnf, lrstd     []float32
	scores                               []float32 // [n_heads, decRows, maxLen]

	tEmb embedTask
	tRMS rmsFwdTask
	tQK  qkPrepTask
	tSwi swigluTask
	tAtt refAttnTask
	tLin refGemvTask

	// hist holds the context of a mixture-of-experts model, whose blocks
	// the cached path does not run: Append recomputes it with Logits.
	hist []int32
}

// NewDecoder returns a Decoder whose cache holds up to maxLen tokens
// (1 ≤ maxLen ≤ model.seq_len: RoPE tables and training stop there).
func newRefDecoder(m *Model, maxLen int) (*refDecoder, error) {
	c := m.Cfg
	if maxLen < 1 || maxLen > c.SeqLen {
		return nil, fmt.Errorf("model: decoder length %d, want 1..model.seq_len=%d", maxLen, c.SeqLen)
	}
	D, H, KV, F, hd := c.DModel, c.NHeads, c.NKVHeads, c.MLPHidden, m.hd
	R := min(decRows, maxLen)
	d := &refDecoder{m: m, maxLen: maxLen,
		x: make([]float32, R*D), ln: make([]float32, R*D), qkv: make([]float32, R*m.qkvDim),
		atty: make([]float32, R*m.attDim), gu: make([]float32, R*2*F), h: make([]float32, R*F),
		sig: make([]float32, R*F), rstd: make([]float32, R), lnf: make([]float32, D), lrstd: make([]float32, 1),
		scores: make([]float32, H*R*maxLen),
	}
	if c.QKNorm {
		d.qkvRaw = make([]float32, R*m.qkvDim)
		d.qnRstd = make([]float32, R*H)
		d.knRstd = make([]float32, R*KV)
	}
	d.k = make([][]float32, c.NLayers)
	d.v = make([][]float32, c.NLayers)
	for l := range d.k {
		d.k[l] = make([]float32, maxLen*KV*hd)
		d.v[l] = make([]float32, maxLen*KV*hd)
	}
	return d, nil
}

// Reset empties the cache (the next Append starts at position 0).
func (d *refDecoder) Reset() { d.n, d.hist = 0, d.hist[:0] }

// Len is the number of tokens in the cache.
func (d *refDecoder) Len() int { return d.n }

// Cap is the most tokens the cache holds (NewDecoder's maxLen).
func (d *refDecoder) Cap() int { return d.maxLen }

// Append feeds tokens (at least one) after those already in the cache and
// writes into logits (len vocab) the next-token logits after the last of
// them; a nil logits skips the lm_head (prefill). It is an error, leaving
// the cache as it was, when a token is outside the vocabulary or the
// context would exceed the decoder's length.
func (d *refDecoder) Append(tokens []int32, logits []float32) error {
	c := d.m.Cfg
	if len(tokens) == 0 {
		return errors.New("model: decoder Append of no tokens")
	}
	if d.n+len(tokens) > d.maxLen {
		return fmt.Errorf("model: decoder context of %d+%d tokens exceeds its length %d", d.n, len(tokens), d.maxLen)
	}
	if logits != nil && len(logits) != c.Vocab {
		return fmt.Errorf("model: decoder logits has length %d, want vocab=%d", len(logits), c.Vocab)
	}
	for i, t := range tokens {
		if t < 0 || int(t) >= c.Vocab {
			return fmt.Errorf("model: decoder token[%d]=%d outside vocab [0,%d)", i, t, c.Vocab)
		}
	}
	if d.m.moe.active() {
		d.hist = append(d.hist, tokens...)
		d.n += len(tokens)
		if logits == nil {
			return nil
		}
		return d.m.Logits(d.hist, logits)
	}
	R := len(d.rstd)
	var last int
	for s := 0; s < len(tokens); s += R {
		e := min(s+R, len(tokens))
		d.step(tokens[s:e])
		last = e - s - 1
	}
	if logits == nil {
		return nil
	}
	// logits = lm_head(rmsnorm(x_last))
	D := c.DModel
	ops.RMSNormForward(d.lnf, d.lrstd, d.x[last*D:(last+1)*D], d.m.p.lnf, D, float32(c.NormEps), 0, 1)
	d.linear(logits, d.lnf, d.m.p.lm, 1, D, c.Vocab, false)
	return nil
}

// step runs n ≤ decRows new tokens at positions d.n … d.n+n−1 through every
// block, appending their keys and values to the cache; the final residual
// rows are left in d.x.
func (d *refDecoder) step(tokens []int32) {
	m := d.m
	c := m.Cfg
	n, p0 := len(tokens), d.n
	D, H, KV, F, hd := c.DModel, c.NHeads, c.NKVHeads, c.MLPHidden, m.hd
	kvw := KV * hd
	eps := float32(c.NormEps)
	x := d.x[:n*D]

	d.tEmb = embedTask{out: x, tokens: tokens, wte: m.p.emb, C: D}
	kernels.ParallelForTask(n, 64, &d.tEmb)
	for l := 0; l < c.NLayers; l++ {
		w := &m.p.layers[l]
		d.rms(d.ln, x, w.ln1, n, D, eps)
		var raw []float32
		if c.QKNorm {
			raw = d.qkvRaw
			d.linear(raw, d.ln, w.qkv, n, D, m.qkvDim, false)
		} else {
			d.linear(d.qkv, d.ln, w.qkv, n, D, m.qkvDim, false)
		}
		// row r sits at absolute position p0+r: tables from p0 on, and a
		// period beyond the rows so that r mod n = r
		m.qkPrep(&d.tQK, l, d.qkv, raw, d.qnRstd, d.knRstd, n, n, p0)
		kc, vc := d.k[l], d.v[l]
		for r := 0; r < n; r++ {
			o := r * m.qkvDim
			copy(kc[(p0+r)*kvw:(p0+r+1)*kvw], d.qkv[o+H*hd:o+H*hd+kvw])
			copy(vc[(p0+r)*kvw:(p0+r+1)*kvw], d.qkv[o+(H+KV)*hd:o+(H+KV)*hd+kvw])
		}
		d.tAtt = refAttnTask{d: d, k: kc, v: vc, n: n, p0: p0}
		kernels.ParallelForTask(H, 1, &d.tAtt)
		d.linear(x, d.atty, w.wo, n, m.attDim, D, true)
		d.rms(d.ln, x, w.ln2, n, D, eps)
		d.linear(d.gu, d.ln, w.gu, n, D, 2*F, false)
		d.tSwi = swigluTask{h: d.h, sig: d.sig, gu: d.gu, F: F}
		kernels.ParallelForTask(n, 16, &d.tSwi)
		d.linear(x, d.h, w.down, n, F, D, true)
	}
	d.n += n
}

// linear is ops.MatmulForward (y = x·Wᵀ, + y when accumulate) for n rows.
func (d *refDecoder) linear(y, x, w []float32, n, in, out int, accumulate bool) {
	if n > gemvRows || d.m.prec == ops.BF16 { // bf16: no float32 dot products
		d.m.prec.MatmulForward(y, x, w, n, in, out, accumulate)
		return
	}
	d.tLin = refGemvTask{y: y, x: x, w: w, n: n, in: in, out: out, acc: accumulate}
	kernels.ParallelForTask(out, 64, &d.tLin)
}

// refGemvTask computes output columns [s, e) of y[n, out] = x[n, in]·Wᵀ
// (+ y when acc), W [out, in] row-major, as dot products of x's rows with
// W's rows: each weight row is read once, straight from memory.
type refGemvTask struct {
	y, x, w    []float32
	n, in, out int
	acc        bool
}

func (t *refGemvTask) Run(s, e int) {
	for j := s; j < e; j++ {
		wr := t.w[j*t.in : (j+1)*t.in]
		for r := 0; r < t.n; r++ {
			v := kernels.Dot(t.x[r*t.in:(r+1)*t.in], wr)
			if t.acc {
				v += t.y[r*t.out+j]
			}
			t.y[r*t.out+j] = v
		}
	}
}

func (d *refDecoder) rms(out, inp, w []float32, N, C int, eps float32) {
	d.tRMS = rmsFwdTask{out: out, rstd: d.rstd, inp: inp, w: w, C: C, eps: eps}
	kernels.ParallelForTask(N, 32, &d.tRMS)
}

// refAttnTask is causal attention of n new query rows (absolute positions
// p0 … p0+n−1) over the cache's L = p0+n keys and values, per query head h
// (key/value head h/(H/KVH)), with s = 1/√head_dim:
//
//	S = s·Q_h·K_kvᵀ [n, L],  P_r = softmax(S_r[0 : p0+r+1]) (0 beyond),  O_h = P·V_kv
//
// It is ops.Attention's forward restricted to the new rows, without the
// document mask (a decoder context is one document).
type refAttnTask struct {
	d     *refDecoder
	k, v  []float32
	n, p0 int
}

func (t *refAttnTask) Run(s, e int) {
	d, m := t.d, t.d.m
	c := m.Cfg
	H, KV, hd := c.NHeads, c.NKVHeads, m.hd
	kvw := KV * hd
	group := H / KV
	L := t.p0 + t.n
	scale := float32(1 / math.Sqrt(float64(hd)))
	R := len(d.rstd)
	for h := s; h < e; h++ {
		kv := h / group
		S := d.scores[h*R*d.maxLen : h*R*d.maxLen+t.n*L]
		m.prec.Sgemm(false, true, t.n, L, hd, scale, d.qkv[h*hd:], m.qkvDim, t.k[kv*hd:], kvw, 0, S, L)
		for r := 0; r < t.n; r++ {
			row := S[r*L : (r+1)*L]
			v := row[:t.p0+r+1]
			mx := v[0]
			for _, x := range v {
				mx = max(mx, x)
			}
			var sum float32
			for j, x := range v {
				ex := ops.Expf(x - mx)
				v[j] = ex
				sum += ex
			}
			inv := 1 / sum
			for j := range v {
				v[j] *= inv
			}
			clear(row[t.p0+r+1:])
		}
		m.prec.Sgemm(false, false, t.n, hd, L, 1, S, L, t.v[kv*hd:], kvw, 0, d.atty[h*hd:], m.attDim)
	}
}
