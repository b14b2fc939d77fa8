package kernels

import (
	"fmt"
	"sync"
	"unsafe"
)

// SGEMM in the Goto/BLIS style. For each kc-deep slice of the k dimension
// and each nc-wide panel of op(B), the panel is packed into nr-wide strips
// (k-major, zero-padded to a multiple of nr), then every mc-tall block of
// op(A) is packed into mr-tall strips (k-major, zero-padded) and the
// micro-kernel computes each mr×nr tile of C from one A strip and one B
// strip. Packing hides the transposes: the micro-kernel only ever sees the
// packed layout, so NN, NT, TN and TT share it.
//
// Parallelism: with op(A) tall enough, the B panel is packed by all threads
// together and the mc blocks of C rows are shared out dynamically; when m is
// small but n large, op(A) is packed once and the nr-strip columns of C are
// shared out instead, each thread packing its own part of B.

// gemmKernel is one micro-kernel and its blocking parameters.
type gemmKernel struct {
	name       string
	mr, nr     int // tile of C computed by one call
	kc, mc, nc int // cache blocking: k depth, rows of A per block, columns of B per panel
	// fn sets the mr×nr tile c (row stride ldc) to
	// alpha·Σ_p ap[i·rs+p·cs]·bp[p·nr+j] + beta·c, for p < k (k ≥ 1). When
	// beta == 0 the tile is not read. bp is a packed k-major strip; ap is
	// either a k-major strip (rs=1, cs=mr) or mr row copies (rs=row stride,
	// cs=1).
	fn func(k int, ap []float32, rs, cs int, bp, c []float32, ldc int, alpha, beta float32)
	// fnNT, when set, is fn for beta == 0 writing the tile with streaming
	// (non-temporal) stores, for a C too large to stay in cache (see
	// streamMinFloats); the tile must be 64-byte aligned.
	fnNT func(k int, ap []float32, rs, cs int, bp, c []float32, ldc int, alpha, beta float32)
	// rowsFn, when set, is fn for a tile of only rows < mr rows (the bottom
	// edge of C), writing C directly.
	rowsFn func(rows, k int, ap []float32, rs, cs int, bp, c []float32, ldc int, alpha, beta float32)
	// packBT, when set, packs one full nr-wide strip of op(B) = Bᵀ
	// (columns j0.., depth kc from p0) into dst, reporting false when it
	// cannot (then the Go loop does it).
	packBT func(dst, b []float32, ldb, p0, j0, kc int) bool
	// packBN, when set, is packBT for op(B) = B (rows of B copied).
	packBN func(dst, b []float32, ldb, p0, j0, kc int) bool
	// packAT, when set, packs the first full strips of op(A) = Aᵀ (rows
	// i0.. of op(A), depth kc from p0) k-major as packA lays them out
	// (strip s at dst[s·ss], k step p at +p·kmajorStride(mr)), reporting
	// false when it cannot (then the Go loop does it).
	packAT func(dst, a []float32, lda, i0, p0, full, kc, ss int) bool
	// packATRows, for a bf16 aRows kernel, packs op(A) = Aᵀ (rows i0..
	// i0+mc, depth kc from p0) as rows of pairs ld words apart as far as
	// it can: the first rows rows, their first pairs pairs (the Go loop
	// does the rest).
	packATRows func(dst, a []float32, lda, i0, p0, mc, kc, ld int) (rows, pairs int)
	// bf16 marks a kernel whose packed operands hold pairs of bfloat16
	// (bf16pack.go): one 32-bit slot holds two consecutive k, and the
	// micro-kernel's k counts pairs (kdepth).
	bf16 bool
	// cvtRow, for a bf16 kernel, rounds src to bf16 pairs into dst
	// (dst[i] holds src[2i] and src[2i+1]) as far as it can and returns
	// how many elements of src it did (the Go loop does the rest).
	cvtRow func(dst, src []float32) int
	// kpad, for a bf16 kernel, pads the pairs of k to a multiple of kpad
	// (zero pairs) in packed strips and micro-kernel steps (AMX: 16).
	kpad int
	// block, when set, computes every full mr×nr tile of a macro block in
	// one call (na strips of A sstride apart, nb strips of B, C tile (i,
	// j) at c[i·mr·ldc + j·nr]), as fn would tile by tile; macro then does
	// only the ragged edges (AMX: one tile configuration per block).
	block func(na, nb, k int, ap []float32, rs, sstride int, bp, c []float32, ldc int, alpha, beta float32)
	// aRows: op(A) is always packed as row copies (rs = row stride, cs =
	// 1), Aᵀ too (AMX tiles read rows of A contiguous in k).
	aRows bool
}

// kdepth is the number of micro-kernel steps (and packed rows of a strip)
// for kc of k: kc, or for a bf16 kernel the pairs of k, (kc+1)/2 (the
// second half of an odd k's last pair is zero), rounded up to a multiple
// of kpad.
func (kn *gemmKernel) kdepth(kc int) int {
	if kn.bf16 {
		kp := (kc + 1) / 2
		if kn.kpad > 1 {
			kp = (kp + kn.kpad - 1) / kn.kpad * kn.kpad
		}
		return kp
	}
	return kc
}

// gemmImpl names the implementation Sgemm dispatches to; kern is it.
var (
	gemmImpl string
	kern     *gemmKernel
)

// kernelGo is the portable micro-kernel.
var kernelGo = &gemmKernel{name: "go", mr: 4, nr: 4, kc: 256, mc: 128, nc: 2048, fn: kernel4x4Go}

func init() {
	useKernel(selectKernel(envImpl()))
}

// useKernel switches the implementation (tests use it to cover every path).
func useKernel(k *gemmKernel) {
	kern = k
	gemmImpl = k.name
}

// serialFlops: a GEMM with fewer multiply-adds (m·n·k) runs on the calling
// goroutine only (about 10 µs of work on one core; waking a worker costs a
// few µs). serialPack: a B panel with fewer elements is packed by the caller
// alone.
var (
	serialFlops = 1 << 19
	serialPack  = 1 << 15
)

// gemmCtx is the per-call state; contexts are recycled through ctxFree so that
// a steady-state Sgemm allocates nothing, even when called concurrently.
type gemmCtx struct {
	k *gemmKernel

	transA, transB bool
	m, n, kk       int
	alpha, beta    float32
	a, b, c        []float32
	lda, ldb, ldc  int

	// current block
	pc, kcCur     int
	betaCur       float32
	jc, ncCur     int
	mcChunk       int // rows per work item in the m-split
	ncChunk       int // columns per work item in the n-split
	phase         int
	bPack         []float32       // shared packed B panel (m-split) or shared packed A (n-split)
	bPanel        []float32       // the packed B panel of the current block: bPack, or a part of pb's
	pb            *PackedB        // op(B) packed before the call (SgemmPackedB), else nil
	per           []gemmPerThread // indexed by pool participant
	aRS, aCS, aSS int             // layout of the shared packed A in the n-split
	aPacked       bool            // n-split: op(A) packed into bPack (else read in place)
	serial        bool            // run on the calling goroutine only (SgemmPair)
	stream        bool            // full tiles with fnNT (see streamC)
}

// directARowStride is the longest row stride (floats) at which op(A) = A is
// read in place by the micro-kernel (rs = lda, cs = 1) instead of being
// copied into padded rows first. Below 1,024 floats (4 KiB) the 14 rows a
// tile reads spread over several L1 sets; a stride of 4 KiB (or a multiple)
// maps every row to the same set, so from there on A is copied. Measured
// on the 2-core AVX-512 machine (m = 2,048, NN, 24 Nov 2026, go test
// -bench): in place ran 1.00–1.08× the copy at lda 256–768 and 0.88–0.92×
// at lda 1,024 with n = 768. The kernel sums the same products in the same
// order either way, so the result is bit-identical; only the copy (a
// memory pass over A per panel of B) goes away.
var directARowStride = 1023

// directASpread extends reading op(A) = A in place to longer row strides
// that stay clear of the 4 KiB aliasing (spreadRowStride): there the 14
// rows of a tile fall into different L1 sets, and the copy is a pass over
// A from memory that the in-place read does not need. Measured on the
// 2-core AVX-512 machine (m = 2,048, n = 256, NN, 24 Nov 2026, go test
// -bench, two or three runs each): the lm_head's input gradient (k = 8,192) with
// its rows padded to 8,208 floats ran 206–211 GFLOP/s in place against
// 196–209 copied at the unpadded 8,192 on one thread, and 413–421 against
// 357–377 on two; k = lda = 50,304 (the 124m vocabulary) 220–226 against
// 199–211 and 390–432 against 385–393. At strides that are multiples of
// 1,024 floats in-place reading stayed slower (3,072: 0.91–0.94× on two
// threads), so those are still copied. A variable so that tests can
// switch it off.
var directASpread = true

// spreadRowStride reports whether rows lda floats apart (lda > 1,023)
// start at least one cache line (16 floats) away from a multiple of 4 KiB
// from each other's L1 set: lda mod 1,024 within [16, 1,008].
func spreadRowStride(lda int) bool {
	r := lda % 1024
	return r >= 16 && r <= 1024-16
}

// PaddedStride is the row stride (floats) at which to lay out rows of n
// floats that a GEMM will read as op(A) = A: n rounded up to 16 floats
// (rows start on a cache line, so the GEMM can also stream its stores into
// them), and 16 more when that is a multiple of 1,024 (4 KiB). Such rows
// are read in place (directARowStride, directASpread) instead of being
// copied first.
func PaddedStride(n int) int {
	ld := (n + 15) / 16 * 16
	if ld%1024 == 0 {
		ld += 16
	}
	return ld
}

// directA reports whether op(A) is read in place (see directARowStride,
// directASpread and directATransStride): a kernel with a bottom-edge
// variant (rowsFn, so no tile reads rows past m) and a row stride that
// keeps a tile's rows apart in L1.
func (g *gemmCtx) directA() bool {
	if g.k.rowsFn == nil || g.k.bf16 {
		return false
	}
	if g.transA {
		return g.lda <= directATransStride
	}
	return g.lda <= directARowStride || directASpread && spreadRowStride(g.lda)
}

// directATransStride bounds the row stride (floats) of A at which op(A) =
// Aᵀ is read in place: a k step of an mr-row strip is then mr contiguous
// floats of one row of A (rs = 1, cs = lda), the layout packA builds by
// copying. Read in place, every k step of a strip opens another cache line
// lda floats further on, and at strides of 3 KiB and more these lines
// crowd into few cache sets, so the strip is fetched again for every strip
// of B. Measured on the 2-core AVX-512 machine (the weight gradients dW =
// dYᵀ·X: TN, k = 2,048, n = 256 and 768, 24 Nov 2026, go test -bench),
// with the AVX-512 packing (packAT14): in place ran 1.04× the copy at lda
// 256, even at 512, and 0.85–0.95× from 768 to 3,584 (the gate/up weight
// gradient of ref7m, lda 1,536: 0.87× on one thread, 0.89× on two).
var directATransStride = 511

// rowsOuterMaxB is the largest packed panel of op(B) (nc·kc floats, 384
// KiB) for which the macro-kernel runs its tiles row of tiles by row of
// tiles — each strip of A (in place or packed) kept in L1 while the strips
// of B, all in L2, pass it — instead of column by column (each B strip in
// L1, the A block streaming from L2). These are the small model's products
// (panels of 48–384 KiB at M = 384, kc ≤ 512); a larger panel (ref7m's
// 512 KiB and up) would no longer stay in L2 beside the rest. Measured on
// the 2-core AVX-512 machine (28 Nov 2026, one thread, medians of 15
// alternating runs in the same process): 1.00–1.05× over the column
// order, the forward products most. Each tile gets the same micro-kernel
// call in either order, so the result is bit-identical.
var rowsOuterMaxB = 96 * 1024

// directALayout returns op(A) read in place from row i0, depth p0: the
// slice the micro-kernel starts at and its layout (see packA).
func (g *gemmCtx) directALayout(i0, p0 int) (ap []float32, rs, cs, sstride int) {
	mr := g.k.mr
	if g.transA {
		return g.a[p0*g.lda+i0:], 1, g.lda, mr
	}
	return g.a[i0*g.lda+p0:], g.lda, 1, mr * g.lda
}

type gemmPerThread struct {
	pack []float32 // packed A block (m-split) or B part (n-split)
	edge []float32 // mr×nr scratch tile for ragged edges
	_    [64]byte  // keep threads' headers on separate cache lines
}

const (
	phasePackB = iota
	phaseMBlocks
	phasePackA
	phaseNBlocks
	phasePackBAll   // runAllSlices: every slice's strips of op(B)
	phaseMBlocksAll // runAllSlices: row blocks of C through every slice
)

var (
	ctxMu   sync.Mutex
	ctxFree []*gemmCtx
)

func getCtx() *gemmCtx {
	ctxMu.Lock()
	defer ctxMu.Unlock()
	if n := len(ctxFree); n > 0 {
		c := ctxFree[n-1]
		ctxFree = ctxFree[:n-1]
		return c
	}
	return new(gemmCtx)
}

func putCtx(c *gemmCtx) {
	c.a, c.b, c.c = nil, nil, nil
	c.bPanel, c.pb = nil, nil
	c.serial, c.stream = false, false
	ctxMu.Lock()
	ctxFree = append(ctxFree, c)
	ctxMu.Unlock()
}

func grow(s []float32, n int) []float32 {
	if cap(s) < n {
		return make([]float32, n)
	}
	return s[:n]
}

// Sgemm computes C = alpha·op(A)·op(B) + beta·C for row-major matrices, where
// op(X) is X or Xᵀ. op(A) is m×k, op(B) is k×n, C is m×n; lda, ldb and ldc are
// the row strides of A, B and C as stored (A is m×k, or k×m when transA). When
// beta == 0, C is not read (it may hold NaNs). Large products run on the
// worker pool; steady-state calls allocate nothing. Inconsistent sizes
// (a stride shorter than a row, a slice too short) are programming errors and
// panic on the calling goroutine with a message naming the operand.
func Sgemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	sgemm(false, transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// sgemm is Sgemm, on the calling goroutine alone when serial.
func sgemm(serial, transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	sgemmK(kern, serial, transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// sgemmK is sgemm on micro-kernel kn (a bf16 one for SgemmBF16).
func sgemmK(kn *gemmKernel, serial, transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	if m <= 0 || n <= 0 {
		return
	}
	checkOperand("C", false, m, n, c, ldc)
	if k <= 0 || alpha == 0 {
		scaleC(m, n, beta, c, ldc)
		return
	}
	checkOperand("A", transA, m, k, a, lda)
	checkOperand("B", transB, k, n, b, ldb)
	ctx := getCtx()
	ctx.k = kn
	ctx.transA, ctx.transB = transA, transB
	ctx.m, ctx.n, ctx.kk = m, n, k
	ctx.alpha, ctx.beta = alpha, beta
	ctx.a, ctx.b, ctx.c = a, b, c
	ctx.lda, ctx.ldb, ctx.ldc = lda, ldb, ldc
	ctx.serial = serial
	ctx.stream = streamC(ctx)
	ctx.run()
	putCtx(ctx)
}

// streamMinFloats is the smallest C (m·n floats) written with streaming
// stores: 32 MiB, the L3 of the machines this was measured on. Larger
// results (the logits of the lm_head) would be evicted before they are
// read anyway, and a regular store first reads each line from memory;
// writing 64 MiB in the GEMM's order took 6.5 ms with regular stores and
// 2.4 ms with streaming ones (one thread).
var streamMinFloats = 1 << 23

// streamC reports whether g writes C with streaming stores: a kernel that
// has them, beta == 0, one kc slice (C written once), C at least
// streamMinFloats and every full tile 64-byte aligned (C's start, and
// rows a multiple of 16 floats apart; tiles start every nr = 32 floats).
func streamC(g *gemmCtx) bool {
	return g.k.fnNT != nil && g.beta == 0 && g.kk <= g.k.kc && g.m*g.n >= streamMinFloats &&
		g.ldc%16 == 0 && uintptr(unsafe.Pointer(&g.c[0]))%64 == 0
}

// checkOperand panics unless x, stored row-major with row stride ld, holds
// the rows×cols matrix op(X) (X itself is cols×rows when trans).
func checkOperand(name string, trans bool, rows, cols int, x []float32, ld int) {
	if trans {
		rows, cols = cols, rows
	}
	if ld < cols || (rows-1)*ld+cols > len(x) {
		panic(fmt.Sprintf("kernels.Sgemm: %s is %d×%d as stored with row stride %d, but the stride is below %d or len %d is below %d",
			name, rows, cols, ld, cols, len(x), (rows-1)*ld+cols))
	}
}

// scaleC sets C = beta·C (C = 0 without reading it when beta == 0).
func scaleC(m, n int, beta float32, c []float32, ldc int) {
	for i := 0; i < m; i++ {
		row := c[i*ldc : i*ldc+n]
		if beta == 0 {
			clear(row)
		} else if beta != 1 {
			for j := range row {
				row[j] *= beta
			}
		}
	}
}

// run computes the product (see runPhases), adding its wall time times
// the threads it used to the GEMM profile while that is on.
func (g *gemmCtx) run() {
	t0 := profStart()
	threads := g.runPhases()
	profAdd(&gprof.total, t0, threads)
}

// runPhases computes the product on up to Threads() threads and returns
// how many it used.
func (g *gemmCtx) runPhases() (threads int) {
	kn := g.k
	threads = 1
	if g.m*g.n*g.kk >= serialFlops && !g.serial {
		threads = Threads()
	}
	if len(g.per) < threads {
		g.per = make([]gemmPerThread, threads)
	}
	for i := range g.per[:threads] {
		g.per[i].edge = grow(g.per[i].edge, kn.mr*kn.nr)
	}
	// n-split when op(A) fits in one mc block and gives fewer row tiles than
	// threads to share, while op(B) has columns to spare.
	nsplit := threads > 1 && g.m <= kn.mc && (g.m+kn.mr-1)/kn.mr < 2*threads && g.n >= 2*kn.nr*threads
	if threads > 1 && g.pb == nil && g.kk <= kn.kc && g.directA() && g.n >= 2*kn.nr*threads && g.m*g.kk <= nsplitMaxA {
		nsplit = true // one slice, op(A) read in place: see nsplitMaxA
	}
	if g.pb != nil {
		// B packed before the call (SgemmPackedB): share out columns when
		// op(A), read in place, is small enough to stay in cache, so that
		// B streams once past it; else rows (each thread packs its A blocks).
		nsplit = threads > 1 && g.n >= 2*kn.nr*threads && g.directA() && g.m*min(kn.kc, g.kk) <= packedBNSplitA
	}
	if threads > 1 && !nsplit {
		g.mcChunk = rowChunk(g.m, kn.mr, kn.mc, threads)
	} else {
		g.mcChunk = kn.mc
	}
	if g.pb == nil && !nsplit && threads > 1 && g.kk > kn.kc && g.n <= kn.nc && g.m <= allSlicesMaxM &&
		(g.n+kn.nr-1)/kn.nr*kn.nr*g.kk <= allSlicesMaxB {
		g.runAllSlices(threads)
		return threads
	}
	for pc := 0; pc < g.kk; pc += kn.kc {
		g.pc, g.kcCur = pc, min(kn.kc, g.kk-pc)
		g.betaCur = g.beta
		if pc > 0 {
			g.betaCur = 1
		}
		if nsplit {
			g.runNSplit(threads)
			continue
		}
		for jc := 0; jc < g.n; jc += kn.nc {
			g.jc, g.ncCur = jc, min(kn.nc, g.n-jc)
			strips := (g.ncCur + kn.nr - 1) / kn.nr
			if g.pb != nil {
				g.bPanel = g.pb.panel(pc, jc, g.kcCur)
				g.phase = phaseMBlocks
				g.dispatch(threads, g.m, g.mcChunk)
				continue
			}
			g.bPack = grow(g.bPack, strips*kn.nr*kn.kdepth(g.kcCur))
			g.bPanel = g.bPack
			g.phase = phasePackB
			if strips*kn.nr*g.kcCur < serialPack {
				serialChunks(strips, strips, g)
			} else {
				g.dispatch(threads, strips, max(1, strips/(2*threads)))
			}
			g.phase = phaseMBlocks
			g.dispatch(threads, g.m, g.mcChunk)
		}
	}
	return threads
}

// nsplitMaxA is the largest op(A) (m·k floats, 1 MiB) at which a product
// of one kc slice whose op(A) is read in place (directA) shares out the
// columns of C instead of its rows, whatever m: each thread then packs the
// strips of op(B) it multiplies and reads them from its own L1/L2, in one
// pool job, where the row split packs the panel of op(B) in one job (half
// of it by the other thread, so read from the other core's cache) and
// computes in a second. op(A) is read by every chunk, from L2. These are
// the forward products y = x·Wᵀ of a small model (M = 384 rows, K = 128 or
// 384). Measured on the 2-core AVX-512 machine (28 Nov 2026, go test
// -bench 'SgemmSmall/.*/fwd/t2', alternating, a quiet minute of a shared
// machine): qkv (N 384, K 128) 336–357 against 262–321 GFLOP/s, gate_up
// (N 768) 320–328 against 294–305, down (N 128, K 384) 316–339 against
// 282–323. Each tile gets the same micro-kernel call either way, so the
// result is bit-identical.
var nsplitMaxA = 1 << 18

// rowChunk is the rows of C per work item when threads share out the row
// blocks (the m-split): whole mr-row tiles, at most mc rows, in as many
// chunks as keep the threads' shares of tiles even — the fewest tiles the
// busiest thread computes, claiming chunks in turn — and among those the
// count nearest 4·threads (spare chunks let a thread that another process
// slows down take fewer). Rounding m/(4·threads) up to whole tiles, as
// before 28 Nov 2026, gave the 28 tiles of m = 384 (mr 14) 7 chunks of 4:
// 16 tiles on one thread and 12 on the other. Which tiles a chunk holds
// does not change any element's sum, so the result is the same bit for bit.
func rowChunk(m, mr, mc, threads int) int {
	tiles := (m + mr - 1) / mr
	best, bestSpan, bestDist := 1, 0, 0
	for t := 1; t <= max(1, mc/mr); t++ {
		chunks := (tiles + t - 1) / t
		span := (chunks + threads - 1) / threads * t // tiles on the busiest thread
		if last := tiles - (chunks-1)*t; chunks%threads == 1 && chunks > 1 {
			span = max(span-t+last, (chunks-1)/threads*t) // its last chunk is the short one
		}
		dist := max(chunks-4*threads, 4*threads-chunks)
		if t == 1 || span < bestSpan || span == bestSpan && dist < bestDist {
			best, bestSpan, bestDist = t, span, dist
		}
		if chunks == 1 {
			break
		}
	}
	return best * mr
}

// allSlicesMaxM and allSlicesMaxB bound the products runAllSlices takes:
// at most allSlicesMaxM rows of C (few row blocks per kc slice, so the
// two pool barriers per slice of the usual order are a large share of
// each slice's work) and a packed op(B) of at most allSlicesMaxB floats
// (it stays in L3 while every row block reads all of it). These are the
// weight gradients dW = dYᵀ·X of a small model: on 2 threads (AVX-512,
// 23 Nov 2026) the TN products (m, k, n) = (256, 2048, 256) ran at 398
// against 304 GFLOP/s slice by slice, (256, 2048, 768) 380 against ~310,
// (768, 2048, 256) 428 against 385; at m = 1536 the two orders tied; the
// input gradients dX = dY·W of ref7m too: NN (2048, 768, 256) 459 against
// 435, (2048, 8192, 256) 412 against 400. Larger m is not measured.
var (
	allSlicesMaxM = 4096
	allSlicesMaxB = 1 << 21
)

// runAllSlices computes a product with several kc slices and one nc panel
// in two parallel phases instead of two per slice: all of op(B) is packed
// (every slice), then each row block of C runs through the slices in
// order. Every C tile gets the same micro-kernel calls in the same order
// as in run's slice-by-slice loop (beta on the first slice, 1 after), so
// the result is bit-identical.
func (g *gemmCtx) runAllSlices(threads int) {
	kn := g.k
	strips := (g.n + kn.nr - 1) / kn.nr
	slices := (g.kk + kn.kc - 1) / kn.kc
	g.bPack = grow(g.bPack, strips*kn.nr*kn.kdepth(g.kk))
	g.bPanel = g.bPack
	g.jc, g.ncCur = 0, g.n
	g.phase = phasePackBAll
	g.dispatch(threads, slices*strips, max(1, slices*strips/(4*threads)))
	g.phase = phaseMBlocksAll
	g.dispatch(threads, g.m, g.mcChunk)
}

// runNSplit handles one kc slice when columns are shared out: pack all of
// op(A) once, then give each thread whole nr strips of C.
func (g *gemmCtx) runNSplit(threads int) {
	kn := g.k
	if g.directA() {
		g.aPacked = false
		_, g.aRS, g.aCS, g.aSS = g.directALayout(0, g.pc)
	} else {
		g.aPacked = true
		g.bPack = grow(g.bPack, packASize(g.m, kn.kdepth(g.kcCur), kn.mr)) // holds packed A here
		t0 := profStart()
		g.aRS, g.aCS, g.aSS = packA(kn, g.transA, g.a, g.lda, 0, g.pc, g.m, g.kcCur, g.bPack)
		profAdd(&gprof.pack, t0, 1)
	}
	g.jc, g.ncCur = 0, g.n
	nstrips := (g.n + kn.nr - 1) / kn.nr
	per := max(1, min((nstrips+4*threads-1)/(4*threads), kn.nc/kn.nr))
	g.phase = phaseNBlocks
	g.dispatch(threads, g.n, per*kn.nr)
}

// dispatch runs phase over [0,n) in chunks on up to threads participants.
func (g *gemmCtx) dispatch(threads, n, chunk int) {
	if threads == 1 {
		serialChunks(n, chunk, g)
		return
	}
	parallelChunksW(n, chunk, threads, g)
}

// runw is one work item [s,e) of the current phase on participant w.
func (g *gemmCtx) runw(w, s, e int) {
	kn := g.k
	pt := &g.per[w]
	switch g.phase {
	case phasePackB:
		// strips s..e of the B panel
		t0 := profStart()
		defer profAdd(&gprof.pack, t0, 1)
		for st := s; st < e; st++ {
			j0 := st * kn.nr
			cols := min(kn.nr, g.ncCur-j0)
			packBStrip(kn, g.transB, g.b, g.ldb, g.pc, g.jc+j0, g.kcCur, cols, g.bPanel[st*kn.nr*kn.kdepth(g.kcCur):])
		}
	case phaseMBlocks:
		// rows s..e of C against the packed B panel
		for i0 := s; i0 < e; i0 += g.mcChunk {
			mc := min(g.mcChunk, e-i0)
			ap, rs, cs, ss := g.blockA(pt, i0, g.pc, mc, g.kcCur)
			t0 := profStart()
			g.macro(pt, ap, rs, cs, ss, g.bPanel, i0, mc, g.jc, g.ncCur, g.kcCur, g.betaCur)
			profAdd(&gprof.kernel, t0, 1)
		}
	case phasePackBAll:
		// work item it = slice·strips + strip; slice sl starts at
		// sl·strips·nr·kdepth(kc) (only the last slice is shallower).
		t0 := profStart()
		defer profAdd(&gprof.pack, t0, 1)
		strips := (g.n + kn.nr - 1) / kn.nr
		for it := s; it < e; it++ {
			sl, st := it/strips, it%strips
			pc := sl * kn.kc
			kcs := min(kn.kc, g.kk-pc)
			j0 := st * kn.nr
			packBStrip(kn, g.transB, g.b, g.ldb, pc, j0, kcs, min(kn.nr, g.n-j0), g.bPack[sl*strips*kn.nr*kn.kdepth(kn.kc)+st*kn.nr*kn.kdepth(kcs):])
		}
	case phaseMBlocksAll:
		strips := (g.n + kn.nr - 1) / kn.nr
		for i0 := s; i0 < e; i0 += g.mcChunk {
			mc := min(g.mcChunk, e-i0)
			for pc := 0; pc < g.kk; pc += kn.kc {
				kcs := min(kn.kc, g.kk-pc)
				beta := g.beta
				if pc > 0 {
					beta = 1
				}
				bp := g.bPack[(pc/kn.kc)*strips*kn.nr*kn.kdepth(kn.kc):]
				ap, rs, cs, ss := g.blockA(pt, i0, pc, mc, kcs)
				t0 := profStart()
				g.macro(pt, ap, rs, cs, ss, bp, i0, mc, 0, g.n, kcs, beta)
				profAdd(&gprof.kernel, t0, 1)
			}
		}
	case phaseNBlocks:
		// columns s..e of C against the packed A (all of op(A)'s rows)
		nc := e - s
		ap := g.bPack
		if !g.aPacked {
			ap, _, _, _ = g.directALayout(0, g.pc)
		}
		var bp []float32
		if g.pb != nil { // the strips of columns s.. were packed before the call
			bp = g.pb.panel(g.pc, s, g.kcCur)
		} else {
			t0 := profStart()
			strips := (nc + kn.nr - 1) / kn.nr
			kd := kn.kdepth(g.kcCur)
			pt.pack = grow(pt.pack, strips*kn.nr*kd)
			for st := 0; st < strips; st++ {
				j0 := st * kn.nr
				packBStrip(kn, g.transB, g.b, g.ldb, g.pc, s+j0, g.kcCur, min(kn.nr, nc-j0), pt.pack[st*kn.nr*kd:])
			}
			bp = pt.pack
			profAdd(&gprof.pack, t0, 1)
		}
		t0 := profStart()
		g.macro(pt, ap, g.aRS, g.aCS, g.aSS, bp, 0, g.m, s, nc, g.kcCur, g.betaCur)
		profAdd(&gprof.kernel, t0, 1)
	}
}

// blockA returns the mc×kc block of op(A) from row i0, depth p0, as the
// macro-kernel reads it: in place (directA), else packed into pt's buffer
// (which the GEMM profile counts as packing).
func (g *gemmCtx) blockA(pt *gemmPerThread, i0, p0, mc, kc int) (ap []float32, rs, cs, sstride int) {
	if g.directA() {
		return g.directALayout(i0, p0)
	}
	t0 := profStart()
	pt.pack = grow(pt.pack, packASize(mc, g.k.kdepth(kc), g.k.mr))
	rs, cs, sstride = packA(g.k, g.transA, g.a, g.lda, i0, p0, mc, kc, pt.pack)
	profAdd(&gprof.pack, t0, 1)
	return pt.pack, rs, cs, sstride
}

// macro multiplies a packed mc×kc block of op(A) (ap, laid out as packA
// describes) by a packed kc×nc panel of op(B) (bp) into C[i0:i0+mc, j0:j0+nc]:
// C = alpha·A·B + beta·C.
func (g *gemmCtx) macro(pt *gemmPerThread, ap []float32, rs, cs, sstride int, bp []float32, i0, mc, j0, nc, kc int, beta float32) {
	kn := g.k
	mr, nr := kn.mr, kn.nr
	alpha := g.alpha
	c, ldc := g.c, g.ldc
	kc = kn.kdepth(kc) // micro-kernel steps from here on
	fullDone := false
	if na, nb := mc/mr, nc/nr; kn.block != nil && na > 0 && nb > 0 && !(g.stream && beta == 0) {
		kn.block(na, nb, kc, ap, rs, sstride, bp, c[i0*ldc+j0:], ldc, alpha, beta)
		fullDone = true
	}
	// Tile t of the block: down the columns of tiles (each B strip reused
	// by every A strip of the block, from L1), or across the rows of
	// tiles when the panel of B is small (rowsOuterMaxB).
	nj, ni := (nc+nr-1)/nr, (mc+mr-1)/mr
	rowsOuter := !kn.bf16 && nc*kc <= rowsOuterMaxB
	for t := 0; t < nj*ni; t++ {
		jt, it := t/ni, t%ni
		if rowsOuter {
			it, jt = t/nj, t%nj
		}
		jr, ir := jt*nr, it*mr
		cols := min(nr, nc-jr)
		bs := bp[(jr/nr)*nr*kc:][:nr*kc]
		rows := min(mr, mc-ir)
		as := ap[(ir/mr)*sstride:]
		off := (i0+ir)*ldc + j0 + jr
		if cols == nr {
			if rows == mr && fullDone {
				continue
			}
			if rows == mr {
				if g.stream && beta == 0 {
					kn.fnNT(kc, as, rs, cs, bs, c[off:], ldc, alpha, beta)
				} else {
					kn.fn(kc, as, rs, cs, bs, c[off:], ldc, alpha, beta)
				}
				continue
			}
			if kn.rowsFn != nil {
				kn.rowsFn(rows, kc, as, rs, cs, bs, c[off:], ldc, alpha, beta)
				continue
			}
		}
		// Ragged edge: compute the tile into scratch, then merge. Only
		// rows rows are read from A (it may be read in place, where
		// rows past m do not exist).
		if rows < mr && kn.rowsFn != nil {
			kn.rowsFn(rows, kc, as, rs, cs, bs, pt.edge, nr, 1, 0)
		} else {
			kn.fn(kc, as, rs, cs, bs, pt.edge, nr, 1, 0)
		}
		for i := 0; i < rows; i++ {
			crow := c[off+i*ldc : off+i*ldc+cols]
			erow := pt.edge[i*nr : i*nr+cols]
			if beta == 0 {
				for j, v := range erow {
					crow[j] = alpha * v
				}
			} else {
				for j, v := range erow {
					crow[j] = alpha*v + beta*crow[j]
				}
			}
		}
	}
}

// packedARows is the row stride of A row copies for depth kc: padded by 16
// floats so that successive rows fall in different cache sets.
func packedARows(kc int) int { return kc + 16 }

// packASize is the buffer size packA needs for mc rows of depth kc.
func packASize(mc, kc, mr int) int {
	strips := (mc + mr - 1) / mr
	return max(strips*mr*packedARows(kc), strips*kmajorStride(mr)*kc)
}

// kmajorStride is the distance between k steps in a k-major A strip: mr
// rounded up to 8 floats so that a step's values share one cache line.
func kmajorStride(mr int) int {
	if mr <= 4 {
		return mr
	}
	return (mr + 7) / 8 * 8
}

// packA packs rows i0..i0+mc, columns p0..p0+kc of op(A) for the
// micro-kernel and returns the layout: element (i, p) of strip s is
// dst[s·sstride + i·rs + p·cs]. Rows past mc in the last strip are zero.
// For op(A) = A (rows contiguous in memory) the rows are copied (rs = row
// stride, cs = 1), which is a plain memory copy; for op(A) = Aᵀ each k step
// is a contiguous run of rows, so strips are stored k-major (rs = 1, cs =
// kmajorStride(mr)).
func packA(kn *gemmKernel, trans bool, a []float32, lda, i0, p0, mc, kc int, dst []float32) (rs, cs, sstride int) {
	if kn.bf16 {
		return packABF16(kn, trans, a, lda, i0, p0, mc, kc, dst)
	}
	mr := kn.mr
	if !trans {
		strips := (mc + mr - 1) / mr
		ld := packedARows(kc)
		for i := 0; i < mc; i++ {
			copy(dst[i*ld:i*ld+kc], a[(i0+i)*lda+p0:][:kc])
		}
		for i := mc; i < strips*mr; i++ {
			clear(dst[i*ld : i*ld+kc])
		}
		return ld, 1, mr * ld
	}
	// op(A)[i,p] = a[p·lda+i]: row p0+p of a holds op(A)'s column p, read
	// contiguously and dealt out to the strips.
	full := mc / mr
	cs = kmajorStride(mr)
	ss := cs * kc
	first := 0 // the first strip left to the loop below
	if kn.packAT != nil && full > 0 && kn.packAT(dst, a, lda, i0, p0, full, kc, ss) {
		first = full
	}
	for p := 0; p < kc; p++ {
		src := a[(p0+p)*lda+i0:][:mc]
		switch mr {
		case 14:
			for s := first; s < full; s++ {
				*(*[14]float32)(dst[s*ss+p*cs:]) = *(*[14]float32)(src[s*14:])
			}
		case 6:
			for s := first; s < full; s++ {
				*(*[6]float32)(dst[s*ss+p*cs:]) = *(*[6]float32)(src[s*6:])
			}
		default:
			for s := first; s < full; s++ {
				copy(dst[s*ss+p*cs:s*ss+p*cs+mr], src[s*mr:s*mr+mr])
			}
		}
		if rows := mc - full*mr; rows > 0 {
			dp := dst[full*ss+p*cs : full*ss+p*cs+mr]
			copy(dp, src[full*mr:])
			clear(dp[rows:])
		}
	}
	return 1, cs, ss
}

// packBStrip packs rows p0..p0+kc, columns j0..j0+cols of op(B) into one
// nr-wide strip: dst[p·nr + j] = op(B)[p0+p, j0+j], zero-padded past cols.
func packBStrip(kn *gemmKernel, trans bool, b []float32, ldb, p0, j0, kc, cols int, dst []float32) {
	if kn.bf16 {
		packBStripBF16(kn, trans, b, ldb, p0, j0, kc, cols, dst)
		return
	}
	nr := kn.nr
	d := dst[:kc*nr]
	if !trans {
		if cols == nr && kn.packBN != nil && kn.packBN(d, b, ldb, p0, j0, kc) {
			return
		}
		for p := 0; p < kc; p++ {
			dp := d[p*nr : p*nr+nr]
			copy(dp, b[(p0+p)*ldb+j0:][:cols])
			clear(dp[cols:])
		}
		return
	}
	// op(B)[p,j] = b[j·ldb+p]
	if cols == nr && kn.packBT != nil && kn.packBT(d, b, ldb, p0, j0, kc) {
		return
	}
	for j := 0; j < cols; j++ {
		src := b[(j0+j)*ldb+p0:][:kc]
		for p, v := range src {
			d[p*nr+j] = v
		}
	}
	if cols < nr {
		for p := 0; p < kc; p++ {
			clear(d[p*nr+cols : p*nr+nr])
		}
	}
}

// kernel4x4Go is the portable micro-kernel (mr = nr = 4).
func kernel4x4Go(k int, ap []float32, rs, cs int, bp, c []float32, ldc int, alpha, beta float32) {
	var c00, c01, c02, c03, c10, c11, c12, c13, c20, c21, c22, c23, c30, c31, c32, c33 float32
	bp = bp[:4*k]
	r0, r1, r2, r3 := ap[:], ap[rs:], ap[2*rs:], ap[3*rs:]
	for p := 0; p < k; p++ {
		b := bp[p*4 : p*4+4 : p*4+4]
		o := p * cs
		a0, a1, a2, a3 := r0[o], r1[o], r2[o], r3[o]
		b0, b1, b2, b3 := b[0], b[1], b[2], b[3]
		c00 += a0 * b0
		c01 += a0 * b1
		c02 += a0 * b2
		c03 += a0 * b3
		c10 += a1 * b0
		c11 += a1 * b1
		c12 += a1 * b2
		c13 += a1 * b3
		c20 += a2 * b0
		c21 += a2 * b1
		c22 += a2 * b2
		c23 += a2 * b3
		c30 += a3 * b0
		c31 += a3 * b1
		c32 += a3 * b2
		c33 += a3 * b3
	}
	storeRow4(c[0:4:4], c00, c01, c02, c03, alpha, beta)
	storeRow4(c[ldc:ldc+4:ldc+4], c10, c11, c12, c13, alpha, beta)
	storeRow4(c[2*ldc:2*ldc+4:2*ldc+4], c20, c21, c22, c23, alpha, beta)
	storeRow4(c[3*ldc:3*ldc+4:3*ldc+4], c30, c31, c32, c33, alpha, beta)
}

func storeRow4(c []float32, v0, v1, v2, v3, alpha, beta float32) {
	if beta == 0 {
		c[0], c[1], c[2], c[3] = alpha*v0, alpha*v1, alpha*v2, alpha*v3
		return
	}
	c[0] = alpha*v0 + beta*c[0]
	c[1] = alpha*v1 + beta*c[1]
	c[2] = alpha*v2 + beta*c[2]
	c[3] = alpha*v3 + beta*c[3]
}

// kernelRef is a generic scalar micro-kernel for any mr×nr; tests use it as
// the twin of the assembly kernels.
func kernelRef(mr, nr int) func(k int, ap []float32, rs, cs int, bp, c []float32, ldc int, alpha, beta float32) {
	return func(k int, ap []float32, rs, cs int, bp, c []float32, ldc int, alpha, beta float32) {
		for i := 0; i < mr; i++ {
			for j := 0; j < nr; j++ {
				var s float32
				for p := 0; p < k; p++ {
					s += ap[i*rs+p*cs] * bp[p*nr+j]
				}
				if beta == 0 {
					c[i*ldc+j] = alpha * s
				} else {
					c[i*ldc+j] = alpha*s + beta*c[i*ldc+j]
				}
			}
		}
	}
}
