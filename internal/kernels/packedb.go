package kernels

import "fmt"

// PackedB is the op(B) operand of Sgemm packed ahead of the call, for a
// product whose A comes in parts (row chunks of one large product, such
// as the training head's lm_head GEMMs): Sgemm packs op(B) into nr-wide
// strips per kc slice and nc panel on every call; SgemmPackedB reads the
// strips PackedB.Pack laid out once. The strips are the ones Sgemm would
// pack and the micro-kernel sums the same products in the same order, so
// the result is bit-identical to Sgemm's. The zero value is empty; a
// PackedB is not safe for concurrent Pack calls.
type PackedB struct {
	kern *gemmKernel
	k, n int
	nPad int // n rounded up to a multiple of nr
	buf  []float32
}

// Floats is the number of float32s p holds (0 before the first Pack).
func (p *PackedB) Floats() int { return len(p.buf) }

// PackedBSize is the number of float32s a PackedB holds for a k×n op(B)
// with the active implementation (n padded to whole strips).
func PackedBSize(k, n int) int {
	return k * ((n + kern.nr - 1) / kern.nr * kern.nr)
}

// Pack packs op(B) — k×n, stored as B (k×n, row stride ldb) or, when
// transB, as Bᵀ (n×k) — for the active implementation, reusing p's buffer
// when it is large enough (steady-state calls allocate nothing). Large
// operands are packed on the worker pool. Inconsistent sizes panic, as in
// Sgemm.
func (p *PackedB) Pack(transB bool, k, n int, b []float32, ldb int) {
	if k <= 0 || n <= 0 {
		panic(fmt.Sprintf("kernels.PackedB.Pack: op(B) is %d×%d, want both > 0", k, n))
	}
	checkOperand("B", transB, k, n, b, ldb)
	kn := kern
	p.kern, p.k, p.n = kn, k, n
	p.nPad = (n + kn.nr - 1) / kn.nr * kn.nr
	p.buf = grow(p.buf, k*p.nPad)
	g := getCtx()
	g.k = kn
	g.transB, g.b, g.ldb = transB, b, ldb
	g.kk, g.n = k, n
	threads := Threads()
	if len(g.per) < threads {
		g.per = make([]gemmPerThread, threads)
	}
	// Profiled, packing counts as a call that holds every thread (a small
	// operand is packed by this one while the others wait).
	t0 := profStart()
	defer profAdd(&gprof.total, t0, threads)
	g.phase = phasePackB
	for pc := 0; pc < k; pc += kn.kc {
		g.pc, g.kcCur = pc, min(kn.kc, k-pc)
		for jc := 0; jc < n; jc += kn.nc {
			g.jc, g.ncCur = jc, min(kn.nc, n-jc)
			strips := (g.ncCur + kn.nr - 1) / kn.nr
			g.bPanel = p.panel(pc, jc, g.kcCur)[:strips*kn.nr*g.kcCur]
			if strips*kn.nr*g.kcCur < serialPack {
				serialChunks(strips, strips, g)
			} else {
				g.dispatch(threads, strips, max(1, strips/(2*threads)))
			}
		}
	}
	g.b = nil
	putCtx(g)
}

// packedBNSplitA is the largest op(A) slice (m·kc floats, 512 KiB) that
// SgemmPackedB keeps in cache while threads share out B's columns.
var packedBNSplitA = 1 << 17

// panel is the packed panel of the kc slice starting at k index pc and the
// nc panel starting at column jc (slice depth kcCur): slices follow each
// other, each holding its nr-wide strips in column order (the panels of a
// slice are consecutive runs of them), so jc may be any multiple of nr.
func (p *PackedB) panel(pc, jc, kcCur int) []float32 {
	return p.buf[pc*p.nPad+jc*kcCur:]
}

// SgemmPackedB is Sgemm with op(B) taken from p: C = alpha·op(A)·p + beta·C
// with op(A) m×k (A stored m×k, or k×m when transA) and C m×n, where k and
// n are p's. The result is bit-identical to Sgemm's on the operand p was
// packed from. p must have been packed by the implementation active now
// (a switch in between panics, as do inconsistent sizes).
func SgemmPackedB(transA bool, m int, alpha float32, a []float32, lda int, p *PackedB, beta float32, c []float32, ldc int) {
	if p.kern != kern {
		panic("kernels.SgemmPackedB: the operand was packed for another GEMM implementation (or not packed)")
	}
	k, n := p.k, p.n
	if m <= 0 {
		return
	}
	checkOperand("C", false, m, n, c, ldc)
	if alpha == 0 {
		scaleC(m, n, beta, c, ldc)
		return
	}
	checkOperand("A", transA, m, k, a, lda)
	ctx := getCtx()
	ctx.k = kern
	ctx.transA, ctx.transB = transA, false
	ctx.m, ctx.n, ctx.kk = m, n, k
	ctx.alpha, ctx.beta = alpha, beta
	ctx.a, ctx.c = a, c
	ctx.lda, ctx.ldc = lda, ldc
	ctx.pb = p
	ctx.run()
	putCtx(ctx)
}
