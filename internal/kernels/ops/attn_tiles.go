package ops

import (
	"math"
	"sync"
)

// The tile path of Attention: the same products as the Sgemm path, each
// computed tile by tile with the kernels of attn_amd64.s, which sum every
// element exactly as kernels.Sgemm's AVX-512 micro-kernel does (one FMA
// chain over k in order, ·alpha, then + beta·C). Every result is therefore
// bit-identical to the Sgemm path's; what changes is the work around the
// chains:
//
//   - nothing is repacked per row block: the product's B rows (V, K, Q,
//     dO) are read in place, and Kᵀ and Vᵀ (the B of S = s·Q·Kᵀ and
//     dP = dO·Vᵀ) are transposed once per (b, head) or (b, kv-head);
//   - tiles wholly above the diagonal are skipped at tile granularity
//     (12 queries × 32 keys for S and dP, 16 keys where a row tile's keys
//     end), not per 64-query block;
//   - a chain over keys stops at the tile's last query (P and dS are 0
//     past the diagonal, and adding an exact 0 leaves a sum unchanged), and
//     the dK, dV chains over a block's queries start at the tile's first
//     key (the queries before it contribute exact zeros).
//
// The dK += s·dSᵀ·Q and dV += Pᵀ·dO sums keep the Sgemm path's grouping:
// one chain per block of Block queries, added to dK, dV block after block
// and head after head, so their roundings are the same too (the first sum
// into each row is written as attnFirst, which gives the bits of adding it
// to a cleared row, so dK and dV are not cleared first). The dP pass
// prefetches the probabilities that the softmax backward then reads, tile
// by tile; the softmax backward zeroes only the maxTileRows entries of dS
// past the diagonal that the tiles read.

// attnBufs holds the free per-task scratch buffers of the tile path (one
// per task running at once, so at most a few; reused by every Attention).
var attnBufs struct {
	sync.Mutex
	free [][]float32
}

// getBuf returns scratch of n floats (contents undefined).
func getBuf(n int) []float32 {
	attnBufs.Lock()
	defer attnBufs.Unlock()
	for i := len(attnBufs.free) - 1; i >= 0; i-- {
		if b := attnBufs.free[i]; cap(b) >= n {
			attnBufs.free = append(attnBufs.free[:i], attnBufs.free[i+1:]...)
			return b[:n]
		}
	}
	return make([]float32, n)
}

// putBuf returns a buffer from getBuf (nil: nothing to return).
func putBuf(b []float32) {
	if b == nil {
		return
	}
	attnBufs.Lock()
	attnBufs.free = append(attnBufs.free, b)
	attnBufs.Unlock()
}

// maxTileRows is the most rows of a tile: a chain over the keys of a row
// tile reads P or dS at most maxTileRows−1 entries past a row's diagonal,
// and so does a dK, dV chain over the queries of a key tile.
const maxTileRows = 12

// tileRows is the number of rows of a tile w columns wide.
func tileRows(w int) int {
	if w == 64 {
		return 6
	}
	return 12
}

// colPieces calls f(c0, w) for the column pieces of a head of width hd (a
// multiple of 32): 64 wide, then 32.
func colPieces(hd int, f func(c0, w int)) {
	c0 := 0
	for ; c0+64 <= hd; c0 += 64 {
		f(c0, 64)
	}
	if c0 < hd {
		f(c0, 32)
	}
}

// lowerTiles computes C = alpha·A·Bᵀ on the tiles of the T×T matrix C
// (row stride T) that reach the diagonal or below, 12 rows × 32 columns
// at a time, or 16 columns where those reach a row tile's diagonal: A is
// T×hd (row stride lda), bt is Bᵀ packed hd×tp (row stride tp ≥ T rounded
// up to 32, zero past T). Tiles past column T go through edge (12×32
// floats). With pf (T×T, row stride T), each tile's part of pf is
// prefetched as it computes (the next pass over those rows reads it).
// With docs (see docRuns), the 32-column tiles wholly before the document
// of a row tile's first row are not computed but zeroed: every row of the
// tile masks those keys.
func lowerTiles(T, hd int, alpha float32, a []float32, lda int, bt []float32, tp int, c, edge, pf []float32, docs []int32) {
	for i0 := 0; i0 < T; i0 += 12 {
		rows := min(12, T-i0)
		ai := a[i0*lda:]
		if i1 := i0 + 12; i1 < T {
			// the next row tile's A
			prefetchRows(a[i1*lda:], lda, min(12, T-i1), hd)
		}
		n := i0 + rows // the columns the tile's rows need
		j0 := firstKey(docs, i0) &^ 31
		for i := 0; i < rows && j0 > 0; i++ {
			clear(c[(i0+i)*T : (i0+i)*T+j0])
		}
		for j0 < n {
			w := 32
			if n-j0 <= 16 {
				w = 16
			}
			if pf != nil {
				prefetchRows(pf[i0*T+j0:], T, rows, min(w, T-j0))
			}
			if j0+w <= T {
				attnTile(rows, w, hd, ai, lda, 1, bt[j0:], tp, c[i0*T+j0:], T, alpha, 0)
			} else {
				attnTile(rows, w, hd, ai, lda, 1, bt[j0:], tp, edge, w, alpha, 0)
				for i := 0; i < rows; i++ {
					copy(c[(i0+i)*T+j0:(i0+i+1)*T], edge[i*w:(i+1)*w])
				}
			}
			j0 += w
		}
	}
}

// causalRowsTimes computes C = alpha·P·B for the T×T lower-triangular P
// (row stride T, 0 above the diagonal) and B T×hd (row stride ldb): the
// chain of row tile i0.. stops at key i0+rows−1, and with docs starts at
// the first key of row i0's document (P is 0 before it in all the tile's
// rows: the chain leaves out exact zeros, which change no sum).
func causalRowsTimes(T, hd int, alpha float32, p []float32, b []float32, ldb int, c []float32, ldc int, docs []int32) {
	colPieces(hd, func(c0, w int) {
		mr := tileRows(w)
		for i0 := 0; i0 < T; i0 += mr {
			rows := min(mr, T-i0)
			lo := firstKey(docs, i0)
			attnTile(rows, w, i0+rows-lo, p[i0*T+lo:], T, 1, b[lo*ldb+c0:], ldb, c[i0*ldc+c0:], ldc, alpha, 0)
		}
	})
}

// docRuns returns the segment ids of sequence b when every row's keys are
// one run from its document's first position (ids that never decrease:
// documents packed one after another), else nil: then no tile is skipped
// for the document mask.
func (a *Attention) docRuns(b int) []int32 {
	if a.Seg == nil {
		return nil
	}
	T := a.D.T
	seg := a.Seg[b*T : (b+1)*T]
	if !nonDecreasing(seg) {
		return nil
	}
	return seg
}

// firstKey is the first key row t attends to: the first position of its
// document with docs (see docRuns), else 0.
func firstKey(docs []int32, t int) int {
	if docs == nil {
		return 0
	}
	j := t
	for j > 0 && docs[j-1] == docs[t] {
		j--
	}
	return j
}

// attnFirst, passed as beta to the tile kernels, writes C = alpha·Σ + (+0):
// the first sum into a C that beta = 1 would add to after clearing it to
// +0 (the same bits, −0 sums included), without the clear.
var attnFirst = float32(math.Copysign(0, -1))

// causalTransTimes adds alpha·Pᵀ·B to C (T×hd, row stride ldc) for the
// T×T lower-triangular P (row stride T) and B T×hd (row stride ldb), one
// block of bs rows of P (queries) at a time: C[0:r1] += alpha·P[r0:r1,
// 0:r1]ᵀ·B[r0:r1], as the Sgemm path does. The chain of key tile j0..
// starts at query max(r0, j0). With first, C holds nothing yet (it is
// taken as cleared): block r0 is the first to reach rows r0..r1 of C, which
// it writes as attnFirst, not reading them. With docs, a key tile wholly
// before the document of the chain's first query adds nothing (P is 0
// there for all of the block's queries, whose documents start no earlier)
// and is skipped.
func causalTransTimes(T, hd, bs int, alpha float32, p []float32, b []float32, ldb int, c []float32, ldc int, first bool, docs []int32) {
	colPieces(hd, func(c0, w int) {
		mr := tileRows(w)
		for r0 := 0; r0 < T; r0 += bs {
			r1 := min(r0+bs, T)
			j1 := r1
			if first {
				j1 = r0 // rows r0..r1 below
			}
			// key tiles before the block's first document (a chain from
			// query j0 ≥ r0 always holds key j0 itself)
			lo := firstKey(docs, r0)
			for j0 := 0; j0 < j1; j0 += mr {
				rows := min(mr, j1-j0)
				if j0+rows <= lo {
					continue
				}
				i := max(r0, j0)
				attnTile(rows, w, r1-i, p[i*T+j0:], 1, T, b[i*ldb+c0:], ldb, c[j0*ldc+c0:], ldc, alpha, 1)
			}
			if !first {
				continue
			}
			for j0 := r0; j0 < r1; j0 += mr {
				rows := min(mr, r1-j0)
				attnTile(rows, w, r1-j0, p[j0*T+j0:], 1, T, b[j0*ldb+c0:], ldb, c[j0*ldc+c0:], ldc, alpha, attnFirst)
			}
		}
	})
}

// packT writes bt[d·tp + j] = x[j·ld + d] for j < T, d < hd (a multiple
// of 8), and zeros for T ≤ j < tp: 8×8 blocks in registers, the last T mod
// 8 rows in Go.
func packT(bt []float32, tp int, x []float32, ld, T, hd int) {
	full := T &^ 7
	if full > 0 {
		attnTransT(bt, tp, x, ld, full, hd)
	}
	for j := full; j < T; j++ {
		for d, v := range x[j*ld : j*ld+hd] {
			bt[d*tp+j] = v
		}
	}
	for d := 0; d < hd; d++ {
		clear(bt[d*tp+T : (d+1)*tp])
	}
}

func (k *attnFwdTask) runTiles(s, e int) {
	a := k.a
	d := a.D
	T, hd := d.T, d.HD
	scale := float32(1 / math.Sqrt(float64(hd)))
	group := d.H / d.KVH
	tp := (T+31)&^31 + 16 // padded: rows 2^k floats apart would share cache sets
	buf := getBuf(hd*tp + 12*32)
	kt, edge := buf[:hd*tp], buf[hd*tp:]
	sbuf := k.scoreBuf()
	defer putBuf(sbuf)
	for bh := s; bh < e; bh++ {
		b, h := bh/d.H, bh%d.H
		kv := h / group
		base := b * T * d.Stride
		S := k.scores(sbuf, bh)
		// S = s·Q·Kᵀ (lower tiles)
		packT(kt, tp, k.qkv[base+d.KOff+kv*hd:], d.Stride, T, hd)
		docs := a.docRuns(b)
		lowerTiles(T, hd, scale, k.qkv[base+d.QOff+h*hd:], d.Stride, kt, tp, S, edge, nil, docs)
		a.sm.block(S, bh, docs)
		// O = P·V
		causalRowsTimes(T, hd, 1, S, k.qkv[base+d.VOff+kv*hd:], d.Stride, k.out[b*T*d.OutStride+h*hd:], d.OutStride, docs)
	}
	putBuf(buf)
}

func (k *attnBwdTask) runTiles(s, e int) {
	a := k.a
	d := a.D
	T, hd := d.T, d.HD
	scale := float32(1 / math.Sqrt(float64(hd)))
	group := d.H / d.KVH
	bs := a.block()
	tp := (T+31)&^31 + 16 // padded: rows 2^k floats apart would share cache sets
	buf := getBuf(hd*tp + 12*32)
	vt, edge := buf[:hd*tp], buf[hd*tp:]
	for bk := s; bk < e; bk++ {
		b, kv := bk/d.KVH, bk%d.KVH
		base := b * T * d.Stride
		K := k.qkv[base+d.KOff+kv*hd:]
		dK := k.dqkv[base+d.KOff+kv*hd:]
		dV := k.dqkv[base+d.VOff+kv*hd:]
		packT(vt, tp, k.qkv[base+d.VOff+kv*hd:], d.Stride, T, hd)
		docs := a.docRuns(b)
		for h := kv * group; h < (kv+1)*group; h++ {
			bh := b*d.H + h
			dS := k.datt[bh*T*T:]
			P := k.att[bh*T*T:]
			dO := k.dout[b*T*d.OutStride+h*hd:]
			// dP = dO·Vᵀ (lower tiles), then dS in place
			lowerTiles(T, hd, 1, dO, d.OutStride, vt, tp, dS, edge, P, docs)
			a.smb.Run(bh*T, (bh+1)*T)
			// dQ = s·dS·K
			causalRowsTimes(T, hd, scale, dS, K, d.Stride, k.dqkv[base+d.QOff+h*hd:], d.Stride, docs)
			// dK += s·dSᵀ·Q, dV += Pᵀ·dO, block by block
			// (the group's first head writes dK, dV without a clear)
			first := h == kv*group
			causalTransTimes(T, hd, bs, scale, dS, k.qkv[base+d.QOff+h*hd:], d.Stride, dK, d.Stride, first, docs)
			causalTransTimes(T, hd, bs, 1, P, dO, d.OutStride, dV, d.Stride, first, docs)
		}
		a.ropeBack(k.dqkv, b, kv)
	}
	putBuf(buf)
}
