package model

import (
	"errors"
	"fmt"
	"math"

	"github.com/kestrel-lm/kestrel/internal/kernels"
	"github.com/kestrel-lm/kestrel/internal/kernels/ops"
)

// decRows is the most new tokens of one sequence a decoder pass runs at a
// time; a longer Append is split (it bounds the score scratch).
const decRows = 64

// decPassRows is the most new tokens, all sequences together, that one
// BatchDecoder pass runs: it bounds the scratch (like inferRows for the
// forward-only path) while keeping each linear layer one large GEMM.
var decPassRows = 4096

// decScoreFloats bounds a pass's attention scores (n_heads · rows · length).
const decScoreFloats = 1 << 24

// Decoder generates with a KV cache: it keeps every layer's keys (after
// QK-norm and RoPE at their absolute position) and values for the tokens
// fed so far, so each new token costs one row through every block plus its
// attention over the cache, instead of a forward pass over the whole
// context as Model.Logits does. It reads its Model's parameters (a change
// to them makes the cache stale: Reset) and is not safe for concurrent
// use; it shares nothing else with the Model, so Forward and LogProbs may
// run between its calls. It is a BatchDecoder of one sequence.
type Decoder struct {
	b   *BatchDecoder
	tok [][]int32 // the one sequence's tokens of an Append
}

// NewDecoder returns a Decoder whose cache holds up to maxLen tokens
// (1 ≤ maxLen ≤ model.seq_len: RoPE tables and training stop there).
func (m *Model) NewDecoder(maxLen int) (*Decoder, error) {
	b, err := m.NewBatchDecoder(1, maxLen)
	if err != nil {
		return nil, err
	}
	return &Decoder{b: b, tok: make([][]int32, 1)}, nil
}

// Reset empties the cache (the next Append starts at position 0).
func (d *Decoder) Reset() { d.b.Reset(0) }

// Len is the number of tokens in the cache.
func (d *Decoder) Len() int { return d.b.Len(0) }

// Cap is the most tokens the cache holds (NewDecoder's maxLen).
func (d *Decoder) Cap() int { return d.b.Cap() }

// Append feeds tokens (at least one) after those already in the cache and
// writes into logits (len vocab) the next-token logits after the last of
// them; a nil logits skips the lm_head (prefill). It is an error, leaving
// the cache as it was, when a token is outside the vocabulary or the
// context would exceed the decoder's length.
func (d *Decoder) Append(tokens []int32, logits []float32) error {
	if len(tokens) == 0 {
		return errors.New("model: decoder Append of no tokens")
	}
	d.tok[0] = tokens
	err := d.b.Append(d.tok, logits)
	d.tok[0] = nil
	return err
}

// BatchDecoder is the KV-cache decoder of several independent sequences
// run in lockstep: one Append feeds new tokens to any of them, and every
// pass runs the rows of all its sequences through each linear layer as one
// product. Per sequence the arithmetic is that of a Decoder fed the same
// tokens, bit for bit: rows of a sequence that feeds more than gemvRows
// tokens at once go through the packed SGEMM and the others through dot
// products, as Decoder.Append picks for its call; the last layer computes
// attention output and MLP only for the row whose logits are asked for.
// Not safe for concurrent use; it reads its Model's parameters (a change
// to them makes the caches stale: Reset).
type BatchDecoder struct {
	m      *Model
	maxLen int
	rows   int         // most rows of one pass
	n      []int       // tokens in each sequence's cache
	k, v   [][]float32 // [layer][seq·maxLen·n_kv_heads·head_dim]

	x, ln, qkvRaw, qkv, atty, gu, h []float32 // [rows, ·]
	rstd, qnRstd, knRstd            []float32
	scores                          []float32 // [rows·n_heads·maxLen]
	lnf, logits                     []float32 // [seqs in a pass, D], [·, vocab]
	tok                             []int32   // a pass's tokens [rows]
	rowPos, rowSeq                  []int     // absolute position and sequence of each row
	ents                            []decEntry
	rem                             [][]int32 // tokens of an Append not yet run, per sequence
	taken                           []bool    // sequences in the pass being planned

	tEmb  embedTask
	tRMS  rmsFwdTask
	tPrep decPrepTask
	tSwi  swigluTask
	tAtt  decAttnTask
	tLin  gemvTask

	// hist holds the contexts of a mixture-of-experts model, whose blocks
	// the cached path does not run: Append recomputes them with Logits.
	hist [][]int32
}

// decEntry is one sequence's chunk in a pass.
type decEntry struct {
	seq, row, n, p0 int // the sequence, its first row, its rows, the cache length before
	out             int // its row among the logits rows of the pass, −1: none
}

// NewBatchDecoder returns a BatchDecoder of seqs sequences whose caches
// hold up to maxLen tokens each (1 ≤ maxLen ≤ model.seq_len).
func (m *Model) NewBatchDecoder(seqs, maxLen int) (*BatchDecoder, error) {
	c := m.Cfg
	if maxLen < 1 || maxLen > c.SeqLen {
		return nil, fmt.Errorf("model: decoder length %d, want 1..model.seq_len=%d", maxLen, c.SeqLen)
	}
	if seqs < 1 {
		return nil, fmt.Errorf("model: decoder of %d sequences, want at least 1", seqs)
	}
	D, H, KV, F, hd := c.DModel, c.NHeads, c.NKVHeads, c.MLPHidden, m.hd
	R := min(decRows, maxLen)
	rows := max(R, min(seqs*R, decPassRows, decScoreFloats/(H*maxLen)))
	outs := min(seqs, rows)
	d := &BatchDecoder{m: m, maxLen: maxLen, rows: rows, n: make([]int, seqs),
		x: make([]float32, rows*D), ln: make([]float32, rows*D), qkv: make([]float32, rows*m.qkvDim),
		atty: make([]float32, rows*m.attDim), gu: make([]float32, rows*2*F), h: make([]float32, rows*F),
		rstd: make([]float32, rows), scores: make([]float32, rows*H*maxLen),
		lnf: make([]float32, outs*D), logits: make([]float32, outs*c.Vocab),
		tok: make([]int32, rows), rowPos: make([]int, rows), rowSeq: make([]int, rows),
		ents: make([]decEntry, 0, outs), rem: make([][]int32, seqs), taken: make([]bool, seqs),
		hist: make([][]int32, seqs),
	}
	if c.QKNorm {
		d.qkvRaw = make([]float32, rows*m.qkvDim)
		d.qnRstd = make([]float32, rows*H)
		d.knRstd = make([]float32, rows*KV)
	}
	d.k = make([][]float32, c.NLayers)
	d.v = make([][]float32, c.NLayers)
	for l := range d.k {
		d.k[l] = make([]float32, seqs*maxLen*KV*hd)
		d.v[l] = make([]float32, seqs*maxLen*KV*hd)
	}
	return d, nil
}

// DecoderCacheFloats is the size in float32s of one sequence's cache in a
// decoder of length maxLen: the keys and values of every layer.
func (m *Model) DecoderCacheFloats(maxLen int) int {
	return 2 * m.Cfg.NLayers * maxLen * m.Cfg.NKVHeads * m.hd
}

// Reset empties sequence i's cache (its next Append starts at position 0).
func (d *BatchDecoder) Reset(i int) { d.n[i], d.hist[i] = 0, d.hist[i][:0] }

// Len is the number of tokens in sequence i's cache.
func (d *BatchDecoder) Len(i int) int { return d.n[i] }

// Cap is the most tokens a sequence's cache holds (NewBatchDecoder's maxLen).
func (d *BatchDecoder) Cap() int { return d.maxLen }

// Seqs is the number of sequences.
func (d *BatchDecoder) Seqs() int { return len(d.n) }

// Append feeds tokens[i] after the tokens already in sequence i's cache
// (len(tokens) = Seqs(); an empty tokens[i] leaves sequence i as it is)
// and writes into logits[i·vocab : (i+1)·vocab] the next-token logits
// after the last of them, for every sequence fed; a nil logits skips the
// lm_head (prefill). It is an error, leaving every cache as it was, when
// a token is outside the vocabulary or a context would exceed the
// decoder's length.
func (d *BatchDecoder) Append(tokens [][]int32, logits []float32) error {
	c := d.m.Cfg
	if len(tokens) != len(d.n) {
		return fmt.Errorf("model: decoder Append of %d sequences, want %d", len(tokens), len(d.n))
	}
	if logits != nil && len(logits) != len(d.n)*c.Vocab {
		return fmt.Errorf("model: decoder logits has length %d, want %d sequences × vocab=%d", len(logits), len(d.n), c.Vocab)
	}
	for i, ts := range tokens {
		if err := d.check(i, ts); err != nil {
			return err
		}
	}
	if d.m.moe.active() {
		V := c.Vocab
		for i, ts := range tokens {
			if len(ts) == 0 {
				continue
			}
			d.hist[i] = append(d.hist[i], ts...)
			d.n[i] += len(ts)
			if logits != nil {
				if err := d.m.Logits(d.hist[i], logits[i*V:(i+1)*V]); err != nil {
					return err
				}
			}
		}
		return nil
	}
	copy(d.rem, tokens)
	for {
		N, nS := d.plan(logits != nil)
		if N == 0 {
			return nil
		}
		d.pass(N, nS, logits)
	}
}

// check validates sequence i's new tokens (the error names the sequence
// when there are several).
func (d *BatchDecoder) check(i int, tokens []int32) error {
	c := d.m.Cfg
	var err error
	if d.n[i]+len(tokens) > d.maxLen {
		err = fmt.Errorf("model: decoder context of %d+%d tokens exceeds its length %d", d.n[i], len(tokens), d.maxLen)
	}
	for j, t := range tokens {
		if err == nil && (t < 0 || int(t) >= c.Vocab) {
			err = fmt.Errorf("model: decoder token[%d]=%d outside vocab [0,%d)", j, t, c.Vocab)
		}
	}
	if err != nil && len(d.n) > 1 {
		err = fmt.Errorf("sequence %d: %w", i, err)
	}
	return err
}

// plan lays out the next pass: one chunk of at most decRows tokens of each
// sequence with tokens left, in sequence order while the pass has rows,
// the chunks longer than gemvRows first (rows [0, nS): the SGEMM rows)
// and the others after them (the dot-product rows). A chunk that ends its
// sequence's tokens gets a logits row when logits are asked for. N = 0:
// nothing left.
func (d *BatchDecoder) plan(logits bool) (N, nS int) {
	d.ents = d.ents[:0]
	clear(d.taken)
	R := min(decRows, d.maxLen)
	for sweep := range 2 {
		for i, r := range d.rem {
			n := min(len(r), R)
			if n == 0 || d.taken[i] || (n > gemvRows) != (sweep == 0) || N+n > d.rows || len(d.ents) == cap(d.ents) {
				continue
			}
			d.taken[i] = true
			e := decEntry{seq: i, row: N, n: n, p0: d.n[i], out: -1}
			copy(d.tok[N:N+n], r[:n])
			for k := range n {
				d.rowPos[N+k], d.rowSeq[N+k] = e.p0+k, i
			}
			d.rem[i] = r[n:]
			d.n[i] += n
			N += n
			d.ents = append(d.ents, e)
		}
		if sweep == 0 {
			nS = N
		}
	}
	outs := 0
	for j := range d.ents {
		if e := &d.ents[j]; logits && len(d.rem[e.seq]) == 0 {
			e.out = outs
			outs++
		}
	}
	return N, nS
}

// pass runs the planned rows through every block, appending their keys and
// values to the caches, and writes the logits of the entries that have a
// logits row. In the last layer only those rows go on past the keys and
// values: the residual stream of the other rows is not read again.
func (d *BatchDecoder) pass(N, nS int, logits []float32) {
	m := d.m
	c := m.Cfg
	D := c.DModel
	eps := float32(c.NormEps)
	x := d.x[:N*D]

	d.tEmb = embedTask{out: x, tokens: d.tok[:N], wte: m.p.emb, C: D}
	kernels.ParallelForTask(N, 64, &d.tEmb)
	outs, outsS := 0, 0 // logits rows, and those of SGEMM entries
	for _, e := range d.ents {
		if e.out >= 0 {
			outs++
			if e.n > gemvRows {
				outsS++
			}
		}
	}
	for l := 0; l < c.NLayers; l++ {
		w := &m.p.layers[l]
		last := l == c.NLayers-1
		d.rms(d.ln, x, w.ln1, N, D, eps)
		qkv := d.qkv
		if c.QKNorm {
			qkv = d.qkvRaw
		}
		d.linear(qkv, d.ln, w.qkv, N, nS, D, m.qkvDim, false)
		d.prep(l, N)
		if last && outs == 0 {
			break
		}
		d.tAtt = decAttnTask{d: d, k: d.k[l], v: d.v[l], last: last}
		kernels.ParallelForTask(len(d.ents)*c.NHeads, 1, &d.tAtt)
		n, ns := N, nS
		if last { // the logits rows' residuals to the front (row out ≤ its row)
			n, ns = outs, outsS
			for _, e := range d.ents {
				if e.out >= 0 {
					r := e.row + e.n - 1
					copy(x[e.out*D:(e.out+1)*D], x[r*D:(r+1)*D])
				}
			}
		}
		d.mlpTail(w, n, ns)
	}
	if outs == 0 {
		return
	}
	// logits = lm_head(rmsnorm(x_last)), one dot-product row per sequence
	// as Decoder.Append ran it (the bf16 GEMM in bf16)
	V := c.Vocab
	d.tRMS = rmsFwdTask{out: d.lnf, rstd: d.rstd, inp: x, w: m.p.lnf, C: D, eps: eps}
	kernels.ParallelForTask(outs, 32, &d.tRMS)
	d.linear(d.logits, d.lnf, m.p.lm, outs, 0, D, V, false)
	for _, e := range d.ents {
		if e.out >= 0 {
			copy(logits[e.seq*V:(e.seq+1)*V], d.logits[e.out*V:(e.out+1)*V])
		}
	}
}

// mlpTail is a block after attention over n rows (ns of them SGEMM rows):
// x ← x + o_proj(atty), then x ← x + down(swiglu(gate_up(rmsnorm(x)))).
func (d *BatchDecoder) mlpTail(w *layerW, n, ns int) {
	m := d.m
	c := m.Cfg
	D, F := c.DModel, c.MLPHidden
	d.linear(d.x, d.atty, w.wo, n, ns, m.attDim, D, true)
	d.rms(d.ln, d.x, w.ln2, n, D, float32(c.NormEps))
	d.linear(d.gu, d.ln, w.gu, n, ns, D, 2*F, false)
	d.tSwi = swigluTask{h: d.h, gu: d.gu, F: F} // σ not kept (the same h)
	kernels.ParallelForTask(n, 16, &d.tSwi)
	d.linear(d.x, d.h, w.down, n, ns, F, D, true)
}

// prep applies QK-norm and RoPE to the pass's N rows of qkv at their
// absolute positions and copies their keys and values into the caches.
func (d *BatchDecoder) prep(l, N int) {
	m := d.m
	c := m.Cfg
	d.tPrep = decPrepTask{d: d, l: l}
	if c.QKNorm {
		w := &m.p.layers[l]
		d.tPrep.qn, d.tPrep.kn = w.qn, w.kn
	}
	if m.ropeLayer(l) {
		d.tPrep.cos, d.tPrep.sin = m.cos, m.sin
	}
	kernels.ParallelForTask(N, 16, &d.tPrep)
}

// decPrepTask is qkPrepTask with a position per row, plus the cache copy.
type decPrepTask struct {
	d        *BatchDecoder
	l        int
	qn, kn   []float32 // nil: no QK-norm
	cos, sin []float32 // nil: no RoPE
}

func (t *decPrepTask) Run(s, e int) {
	d, m := t.d, t.d.m
	c := m.Cfg
	H, KV, hd, stride := c.NHeads, c.NKVHeads, m.hd, m.qkvDim
	kvw, half, eps := KV*hd, hd/2, float32(c.NormEps)
	kc, vc := d.k[t.l], d.v[t.l]
	for r := s; r < e; r++ {
		if t.qn != nil {
			ops.HeadRMSNormForward(d.qkv, d.qkvRaw, d.qnRstd, t.qn, stride, 0, H, hd, eps, r, r+1)
			ops.HeadRMSNormForward(d.qkv, d.qkvRaw, d.knRstd, t.kn, stride, H*hd, KV, hd, eps, r, r+1)
			o := r*stride + (H+KV)*hd
			copy(d.qkv[o:o+kvw], d.qkvRaw[o:o+kvw])
		}
		p := d.rowPos[r]
		if t.cos != nil {
			ops.RoPEForward(d.qkv[r*stride:], t.cos[p*half:], t.sin[p*half:], 1, stride, 0, H+KV, hd, 0, 1)
		}
		at := (d.rowSeq[r]*d.maxLen + p) * kvw
		o := r * stride
		copy(kc[at:at+kvw], d.qkv[o+H*hd:o+H*hd+kvw])
		copy(vc[at:at+kvw], d.qkv[o+(H+KV)*hd:o+(H+KV)*hd+kvw])
	}
}

// gemvRows is the most rows a linear layer of the decoder runs as dot
// products (gemvTask); more rows (a prompt) go through the packed SGEMM,
// whose packing of the whole weight matrix only pays off over many rows.
const gemvRows = 4

// linear is ops.MatmulForward (y = x·Wᵀ, + y when accumulate) for n rows:
// rows [0, ns) through the packed SGEMM, the others as dot products (in
// bf16 all through the bf16 GEMM: no float32 dot products).
func (d *BatchDecoder) linear(y, x, w []float32, n, ns, in, out int, accumulate bool) {
	if d.m.prec == ops.BF16 {
		ns = n
	}
	if ns > 0 {
		d.m.prec.MatmulForward(y, x, w, ns, in, out, accumulate)
	}
	if n > ns {
		d.tLin = gemvTask{y: y[ns*out:], x: x[ns*in:], w: w, n: n - ns, in: in, out: out, acc: accumulate}
		kernels.ParallelForTask(out, 64, &d.tLin)
	}
}

// gemvTask computes output columns [s, e) of y[n, out] = x[n, in]·Wᵀ
// (+ y when acc), W [out, in] row-major, as dot products of x's rows with
// W's rows: each weight row is read once, straight from memory.
type gemvTask struct {
	y, x, w    []float32
	n, in, out int
	acc        bool
}

func (t *gemvTask) Run(s, e int) {
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

func (d *BatchDecoder) rms(out, inp, w []float32, N, C int, eps float32) {
	d.tRMS = rmsFwdTask{out: out, rstd: d.rstd, inp: inp, w: w, C: C, eps: eps}
	kernels.ParallelForTask(N, 32, &d.tRMS)
}

// decAttnTask is causal attention, per (entry, query head) task index, of
// an entry's new query rows (absolute positions p0 … p0+n−1) over its
// sequence's cache of L = p0+n keys and values (key/value head h/(H/KVH)),
// with s = 1/√head_dim:
//
//	S = s·Q_h·K_kvᵀ [n, L],  P_r = softmax(S_r[0 : p0+r+1]) (0 beyond),  O_h = P·V_kv
//
// It is ops.Attention's forward restricted to the new rows, without the
// document mask (a decoder context is one document). In the last layer
// (last) only an entry's logits row is computed, into atty's row out.
type decAttnTask struct {
	d    *BatchDecoder
	k, v []float32
	last bool
}

func (t *decAttnTask) Run(s, e int) {
	d, m := t.d, t.d.m
	c := m.Cfg
	H, KV, hd := c.NHeads, c.NKVHeads, m.hd
	kvw := KV * hd
	group := H / KV
	scale := float32(1 / math.Sqrt(float64(hd)))
	for i := s; i < e; i++ {
		en, h := d.ents[i/H], i%H
		q0, orow := 0, en.row // first query row of the entry, its atty row
		if t.last {
			if en.out < 0 {
				continue
			}
			q0, orow = en.n-1, en.out
		}
		nq, L := en.n-q0, en.p0+en.n
		kv := h / group
		base := (en.seq*d.maxLen)*kvw + kv*hd
		S := d.scores[(en.row*H+h*en.n)*d.maxLen:][:nq*L]
		m.prec.Sgemm(false, true, nq, L, hd, scale, d.qkv[(en.row+q0)*m.qkvDim+h*hd:], m.qkvDim, t.k[base:], kvw, 0, S, L)
		for r := 0; r < nq; r++ {
			row := S[r*L : (r+1)*L]
			v := row[:en.p0+q0+r+1]
			mx := v[0] // max(mx, x) without the builtin's NaN and ±0 cases: the same probabilities
			for _, x := range v[1:] {
				if x > mx {
					mx = x
				}
			}
			var sum float32
			for j, x := range v {
				ex := ops.Expf(x - mx)
				v[j] = ex
				sum += ex
			}
			kernels.Scale(1/sum, v) // v[j] *= 1/sum, vectorised (the same products)
			clear(row[en.p0+q0+r+1:])
		}
		m.prec.Sgemm(false, false, nq, hd, L, 1, S, L, t.v[base:], kvw, 0, d.atty[orow*m.attDim+h*hd:], m.attDim)
	}
}
