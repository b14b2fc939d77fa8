package optim

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/kestrel-lm/kestrel/internal/kernels"
)

// Span is one named tensor inside the flat parameter buffer. Kind is
// "matrix", "embedding", "norm" or "bias" and selects the parameter group.
type Span struct {
	Name   string
	Offset int
	Size   int
	Kind   string
	// Shape is the tensor's shape (rows, cols for a matrix); Muon needs it
	// for its matrices, AdamW ignores it.
	Shape []int
}

// ErrNonFinite marks a step refused because a loss, gradient or update
// value was NaN or ±Inf. Nothing was changed.
var ErrNonFinite = errors.New("non-finite value")

// AdamW is AdamW with decoupled weight decay per parameter group, global
// gradient-norm clipping, Levanter-style update-norm clipping over a rolling
// window, and OLMo-core-style skipping of outlier steps.
type AdamW struct {
	cfg    Config
	spans  []Span
	wd     []float64 // per span
	chunks [][]seg   // the spans cut into fixed chunks for parallel passes
	part   []float64 // per-chunk partial sums (3 per chunk)
	full   []bool    // per chunk: its segments cover it whole, in order
	// u is the scratch of the update directions (not state), laid out like
	// the params: Muon's, and float32(u) of the storing pass 1 (see Step);
	// nil until either runs.
	u []float32

	// m2 and v2 are the other half of the double-buffered moments of the
	// storing pass 1 (see Step): pass 1 writes the new moments into them
	// (and float32(u) into u), pass 2 swaps them with M and V. gaps are
	// the parameter ranges outside every span, whose moments pass 2 copies
	// before the swap.
	m2, v2 []float32
	gaps   [][2]int

	// Per-span telemetry: segPart holds each segment's sums of squares
	// (update, param, m, v; 4 per segment), added per span in segment order
	// into sq after each pass. noTelemetry switches it off (benchmarks).
	nseg        int
	segPart     []float64
	sq          []SpanSquares
	noTelemetry bool

	// Muon (optim.name = "muon", muon.go): the spans it updates, a flag per
	// span, the new momentum buffers of the step (laid out like the params,
	// committed into M in pass 2) and the Newton–Schulz scratch.
	muon     []muonMat
	muonSpan []bool
	mbuf     []float32
	ns       *nsWork

	// NAdamW (optim.name = "nadamw", nadamw.go): the product μ_1⋯μ_t of
	// the momentum schedule for t = nadamT, kept from one step to the next
	// (recomputed from scratch when Steps moved otherwise).
	nadamT    int
	nadamProd float64

	// M and V are the first and second moments, laid out like the params.
	M, V []float32
	// Steps counts applied updates (bias correction uses Steps+1).
	Steps int
	// UpdateNorms is the rolling window of unclipped update norms.
	UpdateNorms *Window
	// RebaseUpdateNorms, set after an optimizer swap that changes the
	// update's scale (to or from Muon), rescales UpdateNorms at the next
	// applied step by the ratio of that step's update norm to the window's
	// mean, then clears itself: the window keeps its history's relative
	// spread, in the new optimizer's scale, so update clipping holds from
	// that step on without clipping it for the change of scale.
	RebaseUpdateNorms bool
	// Losses and GradNorms are the skip-step windows.
	Losses, GradNorms *Window
}

// ResetMoments zeroes the first and second moments and the update count,
// so the next step's bias correction starts over as at step 1 (the
// "necromancy" of Marin 32B's rescue: a fresh optimizer state on trained
// weights). The rolling windows are left alone; the caller seeds them.
func (o *AdamW) ResetMoments() {
	clear(o.M)
	clear(o.V)
	o.Steps = 0
}

// NewAdamW makes an optimizer for n parameters laid out as spans (which
// must not overlap; parameters outside every span are not updated).
func NewAdamW(cfg Config, n int, spans []Span) (*AdamW, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	o := &AdamW{cfg: cfg, spans: spans, M: kernels.MakeBuffer(n), V: kernels.MakeBuffer(n),
		UpdateNorms: NewWindow(max(cfg.UpdateWindow, 2)), Losses: NewWindow(max(cfg.SkipWindow, 2)), GradNorms: NewWindow(max(cfg.SkipWindow, 2))}
	decays := map[string]bool{}
	for _, k := range cfg.DecayKinds {
		decays[k] = true
	}
	for _, s := range spans {
		if s.Offset < 0 || s.Size < 0 || s.Offset+s.Size > n {
			return nil, fmt.Errorf("optim: tensor %s [%d, %d) outside %d parameters", s.Name, s.Offset, s.Offset+s.Size, n)
		}
		w := 0.0
		if decays[s.Kind] {
			w = cfg.WeightDecay
		}
		o.wd = append(o.wd, w)
	}
	if err := o.setupMuon(); err != nil {
		return nil, err
	}
	// Fixed chunks: partial sums are added in chunk order, so results do not
	// depend on the number of threads.
	for i, s := range spans {
		for lo := s.Offset; lo < s.Offset+s.Size; {
			c := lo / chunkSize
			hi := min(s.Offset+s.Size, (c+1)*chunkSize)
			for len(o.chunks) <= c {
				o.chunks = append(o.chunks, nil)
			}
			o.chunks[c] = append(o.chunks[c], seg{lo: lo, hi: hi, wd: o.wd[i], span: i, idx: o.nseg, muon: o.IsMuon(i)})
			o.nseg++
			lo = hi
		}
	}
	o.part = make([]float64, 3*len(o.chunks))
	o.full = make([]bool, len(o.chunks))
	for c, ch := range o.chunks {
		next := c * chunkSize
		for _, sg := range ch {
			if sg.lo != next {
				next = -1
				break
			}
			next = sg.hi
		}
		o.full[c] = next == (c+1)*chunkSize
	}
	o.segPart = make([]float64, 4*o.nseg)
	o.sq = make([]SpanSquares, len(spans))
	o.gaps = spanGaps(n, spans)
	return o, nil
}

// spanGaps returns the ranges of [0, n) outside every span.
func spanGaps(n int, spans []Span) [][2]int {
	in := slices.Clone(spans)
	slices.SortFunc(in, func(a, b Span) int { return a.Offset - b.Offset })
	var gaps [][2]int
	next := 0
	for _, s := range in {
		if s.Offset > next {
			gaps = append(gaps, [2]int{next, s.Offset})
		}
		next = max(next, s.Offset+s.Size)
	}
	if next < n {
		gaps = append(gaps, [2]int{next, n})
	}
	return gaps
}

// storeMaxParams bounds the double-buffered step (see Step): above it the
// three scratch buffers (m2, v2, u) are not worth their memory (a
// variable: the tests set it to 0 to run the other path).
var storeMaxParams = 1 << 24

// StateBuffers is how many float32 buffers of the parameters' size an
// optimizer for n parameters holds at most: M and V and the update
// scratch (3), and up to storeMaxParams the second M and V of the
// double-buffered step (5).
func StateBuffers(n int) int {
	if n <= storeMaxParams {
		return 5
	}
	return 3
}

// storing reports whether this step runs the storing pass 1 and the
// swapping pass 2, and makes their buffers: AdamW, AdamC and NAdamW (not
// Muon), at most storeMaxParams parameters, the four-stream kernels there.
func (o *AdamW) storing(n int) bool {
	if o.muon != nil || n > storeMaxParams || len(o.M) != n || !useAVX512 {
		return false
	}
	if len(o.m2) != n {
		o.m2, o.v2, o.u = kernels.MakeBuffer(n), kernels.MakeBuffer(n), kernels.MakeBuffer(n)
	}
	return true
}

// commitStore is pass 2 after a storing pass 1: the new moments are in
// m2 and v2 (those outside every span copied over), so M, V and m2, v2
// swap; θ moves by step·u. With ema (not nil) the same pass folds the new
// θ into the average, as ema.Update would after it (the parameters
// outside every span too): one read of θ instead of two.
func (o *AdamW) commitStore(params []float32, step float64, ema *EMA) {
	for _, g := range o.gaps {
		copy(o.m2[g[0]:g[1]], o.M[g[0]:g[1]])
		copy(o.v2[g[0]:g[1]], o.V[g[0]:g[1]])
	}
	o.M, o.m2 = o.m2, o.M
	o.V, o.v2 = o.v2, o.V
	if ema == nil {
		kernels.ParallelFor(len(o.chunks), 1, func(c0, c1 int) {
			for c := c0; c < c1; c++ {
				for _, sg := range o.chunks[c] {
					thetaUpdate(params[sg.lo:sg.hi], o.u[sg.lo:sg.hi], step)
				}
			}
		})
		return
	}
	b, w := ema.Beta, ema.W
	for _, g := range o.gaps {
		emaUpdate(w[g[0]:g[1]], params[g[0]:g[1]], b, 1-b)
	}
	kernels.ParallelFor(len(o.chunks), 1, func(c0, c1 int) {
		for c := c0; c < c1; c++ {
			for _, sg := range o.chunks[c] {
				thetaEMAUpdate(params[sg.lo:sg.hi], o.u[sg.lo:sg.hi], w[sg.lo:sg.hi], step, b, 1-b)
			}
		}
	})
}

// thetaGo is pass 2's θ update after a storing pass 1:
// p[i] = float32(float64(p[i]) − step·float64(u[i])), as adamCommitGo
// computes it from float32(u).
func thetaGo(p, u []float32, step float64) {
	u = u[:len(p)]
	for i, x := range u {
		p[i] = float32(float64(p[i]) - float64(step*float64(x)))
	}
}

// thetaEMAGo is thetaGo and then emaGo(w, p, b, c) over the same
// elements: the θ pass with the EMA folded in (thetaEMAAVX512's twin).
func thetaEMAGo(p, u, w []float32, step, b, c float64) {
	thetaGo(p, u, step)
	emaGo(w, p, b, c)
}

const chunkSize = 1 << 14

type seg struct {
	lo, hi int
	wd     float64
	span   int // index into spans
	idx    int // index into segPart (segments numbered span by span)
	muon   bool
}

// SpanSquares holds one span's sums of squares, in float64, as of the last
// Step: Update and Param are the span's parts of the squared update_norm
// and param_norm (both zero after a skipped step, like the global ones);
// M and V those of the first and second moments after the step (unchanged
// by a skipped step). Summed over spans they give the global squares to
// float rounding.
type SpanSquares struct {
	Update, Param, M, V float64
}

// SpanSquares returns the per-span sums of squares of the last Step, one
// per span in Spans order. The slice is the optimizer's own: it changes
// with the next Step.
func (o *AdamW) SpanSquares() []SpanSquares { return o.sq }

// gatherSpans adds the per-segment partial sums into the per-span squares
// in segment order, so the result does not depend on the threads.
func (o *AdamW) gatherSpans() {
	clear(o.sq)
	for _, ch := range o.chunks {
		for _, sg := range ch {
			q, x := &o.sq[sg.span], o.segPart[4*sg.idx:4*sg.idx+4]
			q.Update += x[0]
			q.Param += x[1]
			q.M += x[2]
			q.V += x[3]
		}
	}
}

// sumParts adds column k of the per-chunk partial sums in chunk order.
func (o *AdamW) sumParts(k int) float64 {
	var s float64
	for c := 0; c < len(o.chunks); c++ {
		s += o.part[3*c+k]
	}
	return s
}

// Spans returns the tensor layout the optimizer was built with.
func (o *AdamW) Spans() []Span { return o.spans }

// WeightDecayOf reports the weight decay applied to span i.
func (o *AdamW) WeightDecayOf(i int) float64 { return o.wd[i] }

// Result describes one call of Step.
type Result struct {
	GradNorm       float64 // global gradient norm before clipping
	GradClipped    bool    // the gradient was scaled down to max_grad_norm
	UpdateNorm     float64 // norm of the AdamW direction (+ weight decay) before update clipping
	UpdateNormPost float64 // after update clipping
	UpdateClipAt   float64 // the active update-clipping threshold (+Inf when inactive)
	UpdateClipped  bool
	ParamNorm      float64 // parameter norm before the update
	UpdateToWeight float64 // lr·‖update‖ / ‖θ‖
	Skipped        bool    // outlier step: nothing changed
	SkipReason     string
	// UpdateWindowRebase is the factor UpdateNorms was rescaled by at this
	// step (RebaseUpdateNorms), else 0.
	UpdateWindowRebase float64

	// AdamMNorm and AdamVNorm are the L2 norms of the first and second
	// moments after the step (a skipped step leaves them as they were);
	// per-span parts are in SpanSquares. Zero with telemetry off.
	AdamMNorm, AdamVNorm float64

	// EMAFolded reports that StepEMA updated its EMA in the step's θ
	// pass; when false (a skipped or refused step, or a step without the
	// double-buffered pass: Muon, more than storeMaxParams parameters, no
	// AVX-512) the EMA was not touched.
	EMAFolded bool
}

// GradNorm is the global L2 norm of g, accumulated in float64 in order.
func GradNorm(g []float32) float64 {
	var s float64
	for _, x := range g {
		s += float64(x) * float64(x)
	}
	return math.Sqrt(s)
}

// Step applies one update to params from grads at learning rate lr, given
// the step's loss. On ErrNonFinite nothing is changed. A skipped step
// changes neither params nor moments (only the skip windows see it).
func (o *AdamW) Step(params, grads []float32, loss, lr float64) (Result, error) {
	return o.StepEMA(params, grads, loss, lr, nil)
}

// StepEMA is Step that, where it can, also folds the updated params into
// ema (when not nil) in the pass that moves them, to the same bits as
// ema.Update(params) after Step: Result.EMAFolded says whether it did (if
// not, and the step was applied, the caller updates ema itself). The
// caller passes ema only when nothing changes the params between the step
// and the EMA (QK-Clip and the MoE router bias do).
func (o *AdamW) StepEMA(params, grads []float32, loss, lr float64, ema *EMA) (Result, error) {
	var r Result
	r.UpdateClipAt = math.Inf(1)
	if math.IsNaN(loss) || math.IsInf(loss, 0) {
		return r, fmt.Errorf("loss is %v: %w", loss, ErrNonFinite)
	}
	o.gradNormPass(grads)
	r.GradNorm = math.Sqrt(o.sumParts(0))
	if math.IsNaN(r.GradNorm) || math.IsInf(r.GradNorm, 0) {
		return r, fmt.Errorf("gradient norm is %v: %w", r.GradNorm, ErrNonFinite)
	}
	c := o.cfg
	if c.SkipBadSteps {
		lt, lok := o.Losses.Threshold(c.SkipSigma, c.SkipMinSteps)
		gt, gok := o.GradNorms.Threshold(c.SkipSigma, c.SkipMinSteps)
		switch {
		case lok && loss > lt:
			r.Skipped, r.SkipReason = true, fmt.Sprintf("loss %.4g > %.4g (mean+%gσ)", loss, lt, c.SkipSigma)
		case gok && r.GradNorm > gt:
			r.Skipped, r.SkipReason = true, fmt.Sprintf("grad norm %.4g > %.4g (mean+%gσ)", r.GradNorm, gt, c.SkipSigma)
		}
		o.Losses.Push(loss)
		o.GradNorms.Push(r.GradNorm)
		if r.Skipped {
			for i := range o.sq {
				o.sq[i].Update, o.sq[i].Param = 0, 0
			}
			r.AdamMNorm, r.AdamVNorm = o.momentNorms()
			return r, nil
		}
	}
	gs := 1.0
	if c.MaxGradNorm > 0 && r.GradNorm > c.MaxGradNorm {
		gs = c.MaxGradNorm / (r.GradNorm + 1e-6)
		r.GradClipped = true
	}
	t := float64(o.Steps + 1)
	b1, b2 := c.Beta1, c.Beta2
	bc1 := 1 - math.Pow(b1, t)
	bc2 := 1 - math.Pow(b2, t)
	ib1, ib2, eps := float32(1/bc1), float32(1/math.Sqrt(bc2)), float32(c.Eps)
	k1 := adamConsts{gs: gs, b1: b1, c1: 1 - b1, b2: b2, c2: 1 - b2, ib1: ib1, ib2: ib2, eps: eps}
	// The variants of the AdamW direction: NAdamW's Nesterov numerator
	// (nadamw.go) and AdamC's weight decay scaled by lr/optim.lr.
	wdScale := 1.0
	switch c.Name {
	case "nadamw":
		k1.cg, k1.cm = o.nadamCoeffs(o.Steps + 1)
		k1.nesterov = true
	case "adamc":
		wdScale = lr / c.LR
	}
	// Pass 1: the norms of the update direction u and of θ. M, V and θ
	// are not written: a non-finite update norm must leave them untouched,
	// and the update-norm clipping needs the norm before any θ moves. Up to
	// storeMaxParams parameters (AdamW, AdamC, NAdamW on AVX-512), pass 1
	// stores m', v' and float32(u) into m2, v2 and u, and pass 2 swaps M, V
	// with m2, v2 and moves θ by lr·u (commitStore): the step is bound by
	// the vector ports there, and pass 2's second computation of u (a
	// division and a square root per parameter) cost more than the three
	// buffers' traffic. Above it, and with Muon, pass 2 computes each AdamW
	// u again by the same operations (so to the same bits): there the step
	// is bound by memory.
	tel := !o.noTelemetry
	if o.muon != nil {
		if len(o.u) != len(params) {
			o.u = kernels.MakeBuffer(len(params))
		}
		// Muon spans: the direction into u and the new momentum into mbuf
		// first; pass 1 below only sums their squares.
		o.muonDirections(params, grads, gs)
	}
	store := o.storing(len(params))
	o.dirPass(params, grads, &k1, wdScale, store)
	r.UpdateNorm, r.ParamNorm = math.Sqrt(o.sumParts(1)), math.Sqrt(o.sumParts(2))
	if math.IsNaN(r.UpdateNorm) || math.IsInf(r.UpdateNorm, 0) {
		return r, fmt.Errorf("update norm is %v: %w", r.UpdateNorm, ErrNonFinite)
	}
	if tel {
		o.gatherSpans()
	}
	if o.RebaseUpdateNorms {
		r.UpdateWindowRebase = o.rebaseUpdateNorms(r.UpdateNorm)
	}
	us := 1.0
	if c.ClipUpdateNorm {
		if thr, ok := o.UpdateNorms.Threshold(c.UpdateSigma, c.UpdateMinSteps); ok {
			r.UpdateClipAt = thr
			if r.UpdateNorm > thr {
				us = thr / r.UpdateNorm
				r.UpdateClipped = true
			}
		}
		o.UpdateNorms.Push(r.UpdateNorm)
	}
	r.UpdateNormPost = r.UpdateNorm * us
	if r.ParamNorm > 0 {
		r.UpdateToWeight = lr * r.UpdateNormPost / r.ParamNorm
	}
	// Pass 2: commit moments and parameters.
	step := lr * us
	k2 := k1
	k2.step = step
	if store {
		if ema != nil && len(ema.W) != len(params) {
			ema = nil // not this optimizer's average: left to the caller
		}
		o.commitStore(params, step, ema)
		r.EMAFolded = ema != nil
	} else {
		o.commitPass(params, grads, &k2, wdScale)
	}
	o.Steps++
	if tel {
		r.AdamMNorm, r.AdamVNorm = o.momentNorms()
	}
	return r, nil
}

// rebaseUpdateNorms scales the update-norm window by un / its mean (see
// RebaseUpdateNorms) and returns the factor; an empty window or a zero
// mean or norm is left as it is (factor 1).
func (o *AdamW) rebaseUpdateNorms(un float64) float64 {
	o.RebaseUpdateNorms = false
	mean, _ := o.UpdateNorms.MeanStd()
	if o.UpdateNorms.Len() == 0 || !(mean > 0) || !(un > 0) {
		return 1
	}
	f := un / mean
	for i := range o.UpdateNorms.Vals {
		o.UpdateNorms.Vals[i] *= f
	}
	return f
}

// adamConsts are the scalars of the per-element math of one step (the
// assembly kernels read them at fixed offsets: keep the field order).
type adamConsts struct {
	gs             float64 // gradient-clipping scale
	b1, c1, b2, c2 float64 // β1, 1−β1, β2, 1−β2 (c1, c2 computed once per step in float64)
	wd             float64 // the segment's weight decay
	step           float64 // lr · update-clipping scale (pass 2)
	ib1, ib2, eps  float32 // 1/bc1, 1/√bc2, ε
	// NAdamW only (its kernels read them at 72 and 80): the coefficients
	// of the gradient and of the new first moment in the numerator.
	cg, cm float64
	// nesterov selects NAdamW's element update (nadamU) in the Go loops
	// (adamDirGo, adamCommitGo); the assembly has a kernel per variant.
	nesterov bool
}

// The modes of pass 1 (adamDirGo): which sums it keeps.
const (
	dirNorms  = 0 // un, pn (telemetry off)
	dirTel    = 1 // and sm, sv (the chunk's first segment)
	dirTelSeg = 2 // and su, sp, sm, sv (a later segment)
)

// sumSquaresGo returns acc + Σ float64(x[j])², added in element order.
func sumSquaresGo(x []float32, acc float64) float64 {
	for _, v := range x {
		acc += float64(float64(v) * float64(v))
	}
	return acc
}

// adamDirGo is pass 1 over one segment: the update direction
//
//	g = float64(g)·gs
//	m' = float32(β1·m + (1−β1)·g),  v' = float32(β2·v + (1−β2)·g·g)
//	u = float64(m'·ib1 / (√v'·ib2 + ε)) + wd·θ    (quotient in float32)
//
// (adamU), M, V and θ left as they are. It adds u² and θ² to acc[0] (un)
// and acc[1] (pn) in element order; dirTel also m'² and v'² to acc[4]
// (sm) and acc[5] (sv); dirTelSeg in addition u² and θ² to acc[2] (su)
// and acc[3] (sp). The assembly twin (adamDir) must do the same
// operations in the same order. The explicit conversions around products
// change nothing in the default build; they keep a GOAMD64=v3 build from
// fusing a product and a sum into an FMA (the Go spec allows it, an
// explicit conversion forbids it), so every build and CPU gets the same
// bits.
func adamDirGo(mode int, gr, mm, vv, pp []float32, k *adamConsts, acc *[6]float64) {
	un, pn, su, sp, sm, sv := acc[0], acc[1], acc[2], acc[3], acc[4], acc[5]
	mm, vv, pp = mm[:len(gr)], vv[:len(gr)], pp[:len(gr)]
	for j := range gr {
		m, v, u := elemU(gr[j], mm[j], vv[j], pp[j], k)
		p := float64(pp[j])
		un += float64(u * u)
		pn += float64(p * p)
		if mode == dirTelSeg {
			// A later segment: also its own squares of u and θ beside
			// the chunk's (un and pn go on as they were: the global norms
			// do not change by a bit).
			su += float64(u * u)
			sp += float64(p * p)
		}
		if mode != dirNorms {
			// sm, sv: the squares of the new moments as pass 2 stores them.
			sm += float64(float64(m) * float64(m))
			sv += float64(float64(v) * float64(v))
		}
	}
	acc[0], acc[1], acc[2], acc[3], acc[4], acc[5] = un, pn, su, sp, sm, sv
}

// adamDirStoreGo is adamDirGo that also writes each element's m', v' and
// float32(u) to m2, v2 and u (the storing pass 1, see Step).
func adamDirStoreGo(mode int, gr, mm, vv, pp, m2, v2, u []float32, k *adamConsts, acc *[6]float64) {
	adamDirGo(mode, gr, mm, vv, pp, k, acc)
	mm, vv, pp, m2, v2, u = mm[:len(gr)], vv[:len(gr)], pp[:len(gr)], m2[:len(gr)], v2[:len(gr)], u[:len(gr)]
	for j := range gr {
		m, v, x := elemU(gr[j], mm[j], vv[j], pp[j], k)
		m2[j], v2[j], u[j] = m, v, float32(x)
	}
}

// adamU is one element's new moments and update direction (see
// adamDirGo): m' and v' as pass 2 stores them, and u in float64 before
// pass 2 rounds it to float32. m̂/(√v̂+ε) with v̂ = v/bc2 is computed as
// (m·ib1)/(√v·ib2 + ε) in single precision, as PyTorch's float32 AdamW
// does: one division and one square root per parameter.
func adamU(g32, m32, v32, p32 float32, k *adamConsts) (m, v float32, u float64) {
	g := float64(g32) * k.gs
	m = float32(float64(k.b1*float64(m32)) + float64(k.c1*g))
	v = float32(float64(k.b2*float64(v32)) + float64(k.c2*g*g))
	u = float64(m*k.ib1/(float32(sqrt32(v)*k.ib2)+k.eps)) + float64(k.wd*float64(p32))
	return m, v, u
}

// elemU is one element's new moments and update direction under the
// variant k holds: NAdamW's (nadamU) or AdamW's and AdamC's (adamU).
func elemU(g, m, v, p float32, k *adamConsts) (float32, float32, float64) {
	if k.nesterov {
		return nadamU(g, m, v, p, k)
	}
	return adamU(g, m, v, p, k)
}

// adamCommitGo is pass 2 over one segment, elementwise, with m', v' and u
// as pass 1 computed them (adamU):
//
//	M = m',  V = v',  θ = float32(θ − step·float32(u))
func adamCommitGo(gr, mm, vv, pp []float32, k *adamConsts) {
	step := k.step
	mm, vv, pp = mm[:len(gr)], vv[:len(gr)], pp[:len(gr)]
	for j := range gr {
		m, v, u := elemU(gr[j], mm[j], vv[j], pp[j], k)
		mm[j], vv[j] = m, v
		pp[j] = float32(float64(pp[j]) - float64(step*float64(float32(u))))
	}
}

// momentNorms adds the per-span moment squares in span order.
func (o *AdamW) momentNorms() (m, v float64) {
	for _, q := range o.sq {
		m += q.M
		v += q.V
	}
	return math.Sqrt(m), math.Sqrt(v)
}

// sqrt32 is a single-precision square root (the compiler emits SQRTSS for
// this pattern).
func sqrt32(x float32) float32 { return float32(math.Sqrt(float64(x))) }

// EMA is an exponential moving average of the weights: W ← β·W + (1-β)·θ.
type EMA struct {
	Beta float64
	W    []float32
}

// NewEMA starts an average at a copy of params.
func NewEMA(beta float64, params []float32) *EMA {
	return &EMA{Beta: beta, W: append([]float32(nil), params...)}
}

// Update folds params into the average.
func (e *EMA) Update(params []float32) {
	b := e.Beta
	// Element-wise, so the result does not depend on how the range is split.
	kernels.ParallelFor(len(params), 1<<15, func(lo, hi int) {
		emaUpdate(e.W[lo:hi], params[lo:hi], b, 1-b)
	})
}

// emaGo is the EMA update's loop: w[i] = float32(b·w[i] + c·p[i]), each
// product rounded to float64 before the sum (the conversions keep a
// GOAMD64=v3 build from fusing them), as the AVX-512 kernel computes it.
func emaGo(w, p []float32, b, c float64) {
	p = p[:len(w)]
	for i, x := range p {
		w[i] = float32(float64(b*float64(w[i])) + float64(c*float64(x)))
	}
}

// gradNormPass puts each chunk's sum of squared gradients into column 0
// of the per-chunk partial sums.
func (o *AdamW) gradNormPass(grads []float32) {
	// Groups of eight chunks, one group per task: the whole chunks of a
	// group are summed side by side (eight independent sums, each in
	// element order), a group of fewer padded with its first chunk (the
	// padding lanes are dropped). Per task ranges of single chunks never
	// held eight at the small sizes (55 chunks on 2 threads: 7 a task).
	nc := len(o.chunks)
	kernels.ParallelFor((nc+7)/8, 1, func(g0, g1 int) {
		c1 := min(8*g1, nc)
		for c := 8 * g0; c < c1; c++ {
			k := 0
			for k < 8 && c+k < c1 && o.full[c+k] {
				k++
			}
			if k >= 2 {
				// A whole chunk's segments run in order over it.
				var x [8][]float32
				for i := range x {
					x[i] = grads[(c+i%k)*chunkSize : (c+i%k+1)*chunkSize]
				}
				var acc [8]float64
				if sumSquares8(&x, &acc) {
					for i := range k {
						o.part[3*(c+i)] = acc[i]
					}
					c += k - 1
					continue
				}
			}
			var g2 float64
			for _, sg := range o.chunks[c] {
				g2 = sumSquares(grads[sg.lo:sg.hi], g2)
			}
			o.part[3*c] = g2
		}
	})
}

// dirPass is pass 1: each chunk's sums of squares of the update direction
// and of θ into columns 1 and 2 of the partial sums, and (telemetry on)
// each segment's squares into segPart. Nothing is written to M, V or θ.
func (o *AdamW) dirPass(params, grads []float32, k1 *adamConsts, wdScale float64, store bool) {
	tel := !o.noTelemetry
	kernels.ParallelFor(len(o.chunks), 1, func(c0, c1 int) {
		// One kc and acc per task, not per segment: they escaped to the
		// heap when the kernel was a func value (182 allocations a step on
		// the shakespeare-char layout when they were per segment).
		var kc adamConsts
		var acc [6]float64
		for c := c0; c < c1; c++ {
			var un, pn float64
			for k, sg := range o.chunks[c] {
				if sg.muon {
					su, sp, sm := o.muonSums(sg, params)
					un += su
					pn += sp
					if tel {
						o.segPart[4*sg.idx], o.segPart[4*sg.idx+1], o.segPart[4*sg.idx+2], o.segPart[4*sg.idx+3] = su, sp, sm, 0
					}
					continue
				}
				mode := dirNorms
				kc = *k1
				switch {
				case tel && k == 0:
					mode = dirTel
				case tel:
					mode = dirTelSeg
				}
				kc.wd = sg.wd * wdScale
				acc = [6]float64{un, pn}
				if store {
					lo, hi := sg.lo, sg.hi
					adamDirStore(mode, grads[lo:hi], o.M[lo:hi], o.V[lo:hi], params[lo:hi], o.m2[lo:hi], o.v2[lo:hi], o.u[lo:hi], &kc, &acc)
				} else {
					adamDir(mode, grads[sg.lo:sg.hi], o.M[sg.lo:sg.hi], o.V[sg.lo:sg.hi], params[sg.lo:sg.hi], &kc, &acc)
				}
				un, pn = acc[0], acc[1]
				switch mode {
				case dirTel:
					// The chunk's first segment (most chunks hold one): un
					// and pn started at 0, so they are the segment's own
					// sums.
					o.segPart[4*sg.idx], o.segPart[4*sg.idx+1], o.segPart[4*sg.idx+2], o.segPart[4*sg.idx+3] = un, pn, acc[4], acc[5]
				case dirTelSeg:
					o.segPart[4*sg.idx], o.segPart[4*sg.idx+1], o.segPart[4*sg.idx+2], o.segPart[4*sg.idx+3] = acc[2], acc[3], acc[4], acc[5]
				}
			}
			o.part[3*c+1], o.part[3*c+2] = un, pn
		}
	})
}

// commitPass is pass 2: the new moments and parameters.
func (o *AdamW) commitPass(params, grads []float32, k2 *adamConsts, wdScale float64) {
	step := k2.step
	kernels.ParallelFor(len(o.chunks), 1, func(c0, c1 int) {
		var kc adamConsts // one a task: it escapes (see dirPass)
		for c := c0; c < c1; c++ {
			for _, sg := range o.chunks[c] {
				mm, pp := o.M[sg.lo:sg.hi], params[sg.lo:sg.hi]
				if sg.muon {
					copy(mm, o.mbuf[sg.lo:sg.hi])
					for j, u := range o.u[sg.lo:sg.hi] {
						pp[j] = float32(float64(pp[j]) - step*float64(u))
					}
					continue
				}
				kc = *k2
				kc.wd = sg.wd * wdScale
				adamCommit(grads[sg.lo:sg.hi], mm, o.V[sg.lo:sg.hi], pp, &kc)
			}
		}
	})
}
