package model

import (
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/kestrel-lm/kestrel/internal/kernels"
	"github.com/kestrel-lm/kestrel/internal/kernels/ops"
)

// Mixture-of-experts feed-forward block (model.moe_every > 0). In an MoE
// layer the dense SwiGLU MLP is replaced by
//
//	z   = x·W_rᵀ                        router logits [N, E] (x = ln2 output)
//	p   = softmax(z)                    router probabilities
//	S_t = top-k of p_t + b              selection (b: the DeepSeek-V3 bias, 0 with moe_balance = aux)
//	g_tj = p_tj            (j ∈ S_t)    gates, or p_tj / Σ_{m∈S_t} p_tm with moe_norm_topk
//	y_t = Σ_{j∈S_t, kept} g_tj·E_j(x_t) + E_shared(x_t)
//
// where each expert E_j(x) = down_j(silu(gate_j·x) ⊙ up_j·x) is a SwiGLU
// MLP of width moe_expert_hidden. The bias steers selection only; gates
// use the plain probabilities. With moe_capacity_factor cf > 0 each expert
// takes at most C = ceil(cf·N·k/E) assignments of a micro-batch of N
// tokens, first come first served in token order (rank order within a
// token); the rest are dropped: that expert adds nothing to the token.
//
// Dispatch groups the kept assignments by expert (a counting sort), gathers
// their rows into one contiguous block per expert and runs each expert as
// one GEMM over all its tokens; the outputs are scattered back weighted by
// the gates in a fixed order (deterministic for any thread count).
//
// Auxiliary losses, added to the objective (Stats.MoEAux):
//
//	L_bal = α·E·Σᵢ fᵢ·Pᵢ,   fᵢ = (selections of expert i) / (N·k),   Pᵢ = (1/N)·Σ_t p_ti
//	L_z   = β·(1/N)·Σ_t logsumexp(z_t)²
//
// fᵢ counts selections before capacity dropping and carries no gradient;
// ∂L_bal/∂p_ti = α·E·fᵢ/N. Global batch: fᵢ is the share over the step's
// global batch. Micro-batches run one after another, so the gradient of
// micro-batch m uses fᵢ over micro-batches 1..m of the step (the counts
// accumulate from ZeroGrads on); with a single micro-batch this is exact,
// and the value reported as moe_load_balance_loss is E·Σ fᵢ·Pᵢ with both
// over the whole global batch. Every position counts (padding included:
// it is routed like any token).

// moeW holds the views of one MoE layer's parameters (or gradients).
type moeW struct {
	router []float32   // [E, D] mlp.gate.weight
	bias   []float32   // [E] mlp.gate.e_score_correction_bias (moe_balance = bias), else nil
	gu     [][]float32 // [E][2Fe, D] gate_proj and up_proj of each expert, adjacent
	down   [][]float32 // [E][D, Fe]
	sgu    []float32   // [2Fe, D] shared expert (nil without)
	sdown  []float32   // [D, Fe]
}

// moeLayer is one MoE layer's saved forward state and step accumulators.
type moeLayer struct {
	layer int
	n     int // tokens of the last forward

	probs, lse   []float32 // [N*E], [N]
	sel          []int32   // [N*K] selected experts in rank order
	gate         []float32 // [N*K] gates
	row          []int32   // [N*K] dispatched row of the assignment, -1 = dropped
	rowTok       []int32   // [N*K] token of each dispatched row
	rowSlot      []int32   // [N*K] assignment (t*K+j) of each dispatched row
	off          []int     // [E+1] first dispatched row of each expert
	selCount     []float64 // [E] selections of the last forward (before dropping)
	psum         []float64 // [E] Σ_t p_ti of the last forward
	dropped      int
	xe, gu, h    []float32 // dispatched rows: [R, D], [R, 2Fe], [R, Fe]
	sig, y       []float32 // [R, Fe], [R, D]
	sgu, sh, ssg []float32 // shared expert: [N, 2Fe], [N, Fe], [N, Fe]
	aux          float64   // α·L_bal + β·L_z of the last forward (this micro-batch)

	// accumulated over the micro-batches of a step (reset by ZeroGrads)
	accSel, accP    []float64
	accTok, accDrop int
}

// moeState is the model's MoE state: one entry per MoE layer, scratch
// shared by the backward passes.
type moeState struct {
	layers []*moeLayer
	idx    []int // [L] index into layers, -1 for dense layers
	scale  float32
	// backward scratch
	dy, dh, dgu, dxe, dz, dp, dgate []float32
	sdh, sdgu                       []float32
	task                            swigluTask
	tRows                           rowsTask
}

// rowsTask runs one of the dispatch ops over a row range on the worker
// pool (a long-lived task: no allocation per call).
type rowsTask struct {
	op                                 int // rowsGather, rowsScatter, rowsGateBack
	dst, src, y, gate, dgate, dout, dy []float32
	idx                                []int32
	K, C                               int
}

const (
	rowsGather = iota
	rowsScatter
	rowsGateBack
)

func (t *rowsTask) Run(s, e int) {
	switch t.op {
	case rowsGather:
		ops.GatherRows(t.dst, t.src, t.idx, t.C, s, e)
	case rowsScatter:
		ops.ScatterAddRows(t.dst, t.y, t.gate, t.idx, t.K, t.C, s, e)
	case rowsGateBack:
		ops.GateBackwardRows(t.dy, t.dgate, t.dout, t.y, t.gate, t.idx, t.K, t.C, s, e)
	}
}

// scatter adds the gated rows y back into out for N tokens (gate nil: 1).
func (s *moeState) scatter(out, y, gate []float32, row []int32, N, K, C int) {
	s.tRows = rowsTask{op: rowsScatter, dst: out, y: y, gate: gate, idx: row, K: K, C: C}
	kernels.ParallelForTask(N, 16, &s.tRows)
}

// IsMoELayer reports whether layer l has a mixture-of-experts MLP.
func (c Config) IsMoELayer(l int) bool {
	return c.MoEEvery > 0 && (l+1)%c.MoEEvery == 0
}

// moeBias reports whether MoE layers carry the DeepSeek-V3 routing bias.
func (c Config) moeBias() bool { return c.MoEBalance == "bias" }

// RouterBiasMoves reports whether UpdateRouterBias changes parameters after
// each applied step (moe_balance = bias with MoE layers).
func (c Config) RouterBiasMoves() bool { return c.MoEEvery > 0 && c.moeBias() }

func (c Config) validateMoE() []error {
	if c.MoEEvery == 0 {
		return nil
	}
	var errs []error
	bad := func(f string, a ...any) { errs = append(errs, fmt.Errorf(f, a...)) }
	if c.MoEEvery < 0 {
		bad("model.moe_every must be >= 0, got %d", c.MoEEvery)
		return errs
	}
	if c.MoEEvery > c.NLayers {
		bad("model.moe_every (%d) is larger than model.n_layers (%d): no layer would be MoE", c.MoEEvery, c.NLayers)
	}
	if c.MoEExperts < 1 || c.MoEExperts > 1<<12 {
		bad("model.moe_experts must be in [1, 4096], got %d", c.MoEExperts)
	}
	if c.MoETopK < 1 || c.MoETopK > c.MoEExperts {
		bad("model.moe_top_k must be in [1, moe_experts=%d], got %d", c.MoEExperts, c.MoETopK)
	}
	if c.MoEExpertHidden < 1 || c.MoEExpertHidden > MaxMLPHidden {
		bad("model.moe_expert_hidden must be in [1, %d], got %d", MaxMLPHidden, c.MoEExpertHidden)
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"moe_capacity_factor", c.MoECapacityFactor}, {"moe_aux_loss_alpha", c.MoEAuxLossAlpha},
		{"moe_router_z_loss", c.MoERouterZLoss}, {"moe_bias_update_rate", c.MoEBiasRate}} {
		if !(f.v >= 0) || math.IsInf(f.v, 0) {
			bad("model.%s must be a finite number >= 0, got %g", f.name, f.v)
		}
	}
	switch c.MoEBalance {
	case "aux", "bias":
	default:
		bad("model.moe_balance must be aux or bias, got %q", c.MoEBalance)
	}
	return errs
}

// HFExpressible reports whether the MoE layers of c map onto Hugging
// Face's Qwen3-MoE (Qwen3MoeForCausalLM: softmax router mlp.gate, experts
// mlp.experts.N.{gate,up,down}_proj, decoder_sparse_step = moe_every,
// norm_topk_prob = moe_norm_topk, dropless). kestrel names the tensors the
// same way; what Qwen3-MoE cannot hold is refused with an error naming the
// field: a shared expert (ungated here), the DeepSeek-V3 routing bias, a
// capacity factor (Qwen3-MoE never drops) and an MoE model without
// QK-Norm (every Qwen3 layer has q_norm/k_norm). Dense configs return nil.
func (c Config) HFExpressible() error {
	if c.MoEEvery <= 0 {
		return nil
	}
	var errs []error
	if c.MoESharedExpert {
		errs = append(errs, errors.New("model.moe_shared_expert = true: Qwen3-MoE has no shared expert (Qwen2-MoE's is gated, kestrel's is not)"))
	}
	if c.moeBias() {
		errs = append(errs, errors.New(`model.moe_balance = "bias": Qwen3-MoE has no routing bias (e_score_correction_bias is DeepSeek-V3's)`))
	}
	if c.MoECapacityFactor > 0 {
		errs = append(errs, fmt.Errorf("model.moe_capacity_factor = %g: Qwen3-MoE routes without dropping, so its outputs would differ (0 = dropless)", c.MoECapacityFactor))
	}
	if !c.QKNorm {
		errs = append(errs, errors.New("model.qk_norm = false: a Qwen3-MoE layer always has q_norm and k_norm"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("no Hugging Face MoE layout for this model: %w", err)
	}
	return nil
}

// HFMoEConfig returns the Qwen3-MoE keys of a Hugging Face config.json for
// an MoE model (nil for dense ones); the export merges them over the
// Qwen3 keys after HFExpressible accepted the config.
func (c Config) HFMoEConfig() map[string]any {
	if c.MoEEvery <= 0 {
		return nil
	}
	return map[string]any{
		"architectures":         []string{"Qwen3MoeForCausalLM"},
		"model_type":            "qwen3_moe",
		"num_experts":           c.MoEExperts,
		"num_experts_per_tok":   c.MoETopK,
		"moe_intermediate_size": c.MoEExpertHidden,
		"decoder_sparse_step":   c.MoEEvery,
		"mlp_only_layers":       []int{},
		"norm_topk_prob":        c.MoENormTopK,
		"router_aux_loss_coef":  c.MoEAuxLossAlpha,
		"output_router_logits":  false,
	}
}

// moeLayout adds an MoE layer's tensors under prefix p (model.layers.L.).
func (c Config) moeLayout(p string, add func(name, kind string, shape ...int)) {
	D, E, Fe := c.DModel, c.MoEExperts, c.MoEExpertHidden
	add(p+"mlp.gate.weight", "matrix", E, D)
	if c.moeBias() {
		// not trained by the optimizer (its gradient is 0); updated after each step
		add(p+"mlp.gate.e_score_correction_bias", "bias", E)
	}
	for e := 0; e < E; e++ {
		q := p + "mlp.experts." + strconv.Itoa(e) + "."
		add(q+"gate_proj.weight", "matrix", Fe, D)
		add(q+"up_proj.weight", "matrix", Fe, D)
		add(q+"down_proj.weight", "matrix", D, Fe)
	}
	if c.MoESharedExpert {
		add(p+"mlp.shared_expert.gate_proj.weight", "matrix", Fe, D)
		add(p+"mlp.shared_expert.up_proj.weight", "matrix", Fe, D)
		add(p+"mlp.shared_expert.down_proj.weight", "matrix", D, Fe)
	}
}

// mlpActiveParams is the number of MLP weights one token multiplies by in
// layer l: 3·D·F for a dense MLP; the router, k experts and the shared
// expert for an MoE layer.
func (c Config) mlpActiveParams(l int) float64 {
	D := float64(c.DModel)
	if !c.IsMoELayer(l) {
		return 3 * D * float64(c.MLPHidden)
	}
	Fe := float64(c.MoEExpertHidden)
	k := float64(c.MoETopK)
	if c.MoESharedExpert {
		k++
	}
	return float64(c.MoEExperts)*D + k*3*D*Fe
}

// moeViews returns the views of an MoE layer's tensors in buf.
func (m *Model) moeViews(buf []float32, p string) *moeW {
	at := func(name string) []float32 {
		t := m.tensors[m.byName[name]]
		return buf[t.Offset : t.Offset+t.Size : t.Offset+t.Size]
	}
	span := func(first, last string) []float32 {
		a := m.tensors[m.byName[first]]
		b := m.tensors[m.byName[last]]
		return buf[a.Offset : b.Offset+b.Size : b.Offset+b.Size]
	}
	w := &moeW{router: at(p + "mlp.gate.weight")}
	if m.Cfg.moeBias() {
		w.bias = at(p + "mlp.gate.e_score_correction_bias")
	}
	for e := 0; e < m.Cfg.MoEExperts; e++ {
		q := p + "mlp.experts." + strconv.Itoa(e) + "."
		w.gu = append(w.gu, span(q+"gate_proj.weight", q+"up_proj.weight"))
		w.down = append(w.down, at(q+"down_proj.weight"))
	}
	if m.Cfg.MoESharedExpert {
		w.sgu = span(p+"mlp.shared_expert.gate_proj.weight", p+"mlp.shared_expert.up_proj.weight")
		w.sdown = at(p + "mlp.shared_expert.down_proj.weight")
	}
	return w
}

// initMoE sets up the MoE state of a new model.
func (m *Model) initMoE() {
	c := m.Cfg
	m.moe.idx = make([]int, c.NLayers)
	for l := range m.moe.idx {
		m.moe.idx[l] = -1
		if c.IsMoELayer(l) {
			m.moe.idx[l] = len(m.moe.layers)
			E := c.MoEExperts
			m.moe.layers = append(m.moe.layers, &moeLayer{layer: l, off: make([]int, E+1),
				selCount: make([]float64, E), psum: make([]float64, E), accSel: make([]float64, E), accP: make([]float64, E)})
			m.vit.MoE = append(m.vit.MoE, MoEVitals{Layer: l})
		}
	}
}

// moeResetStep clears the step accumulators (called by ZeroGrads: a step
// accumulates its micro-batches from there).
func (m *Model) moeResetStep() {
	for _, st := range m.moe.layers {
		clear(st.accSel)
		clear(st.accP)
		st.accTok, st.accDrop = 0, 0
	}
}

// moeAux sums the auxiliary losses of the last forward's MoE layers.
func (m *Model) moeAux() float64 {
	var s float64
	for _, st := range m.moe.layers {
		s += st.aux
	}
	return s
}

// moeActivationFloats is the memory, in float32-sized words, of the MoE
// layers' saved state and backward scratch for B sequences (0 for dense
// models): per MoE layer the router probabilities, the routing indices and
// the dispatched rows (at most N·k of them), plus the shared scratch.
func (c Config) moeActivationFloats(B int) int {
	if c.MoEEvery <= 0 {
		return 0
	}
	N := satMul(B, c.SeqLen)
	D, E, K, Fe := c.DModel, c.MoEExperts, c.MoETopK, c.MoEExpertHidden
	R := satMul(N, K)
	perLayer := satAdd(satMul(N, E+1), satMul(R, 5))     // probs, lse; sel, gate, row, rowTok, rowSlot
	perLayer = satAdd(perLayer, satMul(R, 2*D+4*Fe))     // xe, y; gu, h, sig
	scratch := satAdd(satMul(R, 2*D+3*Fe), satMul(N, E)) // dy, dxe, dh, dgu; dz
	if c.MoESharedExpert {
		perLayer = satAdd(perLayer, satMul(N, 4*Fe))
		scratch = satAdd(scratch, satMul(N, 3*Fe))
	}
	layers := 0
	for l := 0; l < c.NLayers; l++ {
		if c.IsMoELayer(l) {
			layers++
		}
	}
	return satAdd(satMul(perLayer, layers), scratch)
}

func grow(b []float32, n int) []float32 {
	if cap(b) < n {
		return make([]float32, n)
	}
	return b[:n]
}

func growI(b []int32, n int) []int32 {
	if cap(b) < n {
		return make([]int32, n)
	}
	return b[:n]
}

// moeForward runs the MoE block of layer l on x = ln2 [N, D] and adds its
// output into out [N, D] (which holds the residual).
func (m *Model) moeForward(l, N int, x, out []float32, vitals bool) {
	c := m.Cfg
	st := m.moe.layers[m.moe.idx[l]]
	w := m.p.layers[l].moe
	D, E, K, Fe := c.DModel, c.MoEExperts, c.MoETopK, c.MoEExpertHidden
	st.n = N
	st.probs = grow(st.probs, N*E)
	st.lse = grow(st.lse, N)
	st.sel = growI(st.sel, N*K)
	st.gate = grow(st.gate, N*K)
	st.row = growI(st.row, N*K)
	st.rowTok = growI(st.rowTok, N*K)
	st.rowSlot = growI(st.rowSlot, N*K)

	// router: z = x·W_rᵀ; p = softmax(z), lse = logsumexp(z)
	ops.MatmulForward(st.probs, x, w.router, N, D, E, false)
	ops.SoftmaxRows(st.probs, st.lse, E, 0, N)
	clear(st.selCount)
	clear(st.psum)
	for t := 0; t < N; t++ {
		p := st.probs[t*E : (t+1)*E]
		for i, v := range p {
			st.psum[i] += float64(v)
		}
		sel := st.sel[t*K : (t+1)*K]
		ops.TopK(sel, p, w.bias)
		g := st.gate[t*K : (t+1)*K]
		var s float32
		for j, e := range sel {
			g[j] = p[e]
			s += p[e]
			st.selCount[e]++
		}
		if c.MoENormTopK {
			for j := range g {
				g[j] /= s
			}
		}
	}

	// capacity and dispatch: a counting sort of the kept assignments by expert
	capacity := N // a token selects distinct experts: no expert gets more than N
	if cf := c.MoECapacityFactor; cf > 0 {
		capacity = int(math.Ceil(cf * float64(N*K) / float64(E)))
	}
	kept := st.off[1:] // kept[e] counts, then turned into offsets
	clear(st.off)
	st.dropped = 0
	for a, e := range st.sel[:N*K] {
		if kept[e] < capacity {
			st.row[a] = int32(kept[e]) // position within its expert for now
			kept[e]++
		} else {
			st.row[a] = -1
			st.dropped++
		}
	}
	for e := 0; e < E; e++ { // off[e+1] = off[e] + kept count of e
		st.off[e+1] += st.off[e]
	}
	R := st.off[E]
	for a, e := range st.sel[:N*K] {
		if st.row[a] >= 0 {
			r := int32(st.off[e]) + st.row[a]
			st.row[a] = r
			st.rowTok[r] = int32(a / K)
			st.rowSlot[r] = int32(a)
		}
	}
	st.xe = grow(st.xe, R*D)
	st.gu = grow(st.gu, R*2*Fe)
	st.h = grow(st.h, R*Fe)
	st.sig = grow(st.sig, R*Fe)
	st.y = grow(st.y, R*D)
	m.moe.tRows = rowsTask{op: rowsGather, dst: st.xe, src: x, idx: st.rowTok[:R], C: D}
	kernels.ParallelForTask(R, 64, &m.moe.tRows)

	// experts: one GEMM per expert over its rows
	for e := 0; e < E; e++ {
		r0, r1 := st.off[e], st.off[e+1]
		if r1 == r0 {
			continue
		}
		n := r1 - r0
		m.prec.MatmulForward(st.gu[r0*2*Fe:r1*2*Fe], st.xe[r0*D:r1*D], w.gu[e], n, D, 2*Fe, false)
		m.moe.task = swigluTask{h: st.h[r0*Fe : r1*Fe], sig: st.sig[r0*Fe : r1*Fe], gu: st.gu[r0*2*Fe : r1*2*Fe], F: Fe}
		kernels.ParallelForTask(n, 16, &m.moe.task)
		m.prec.MatmulForward(st.y[r0*D:r1*D], st.h[r0*Fe:r1*Fe], w.down[e], n, Fe, D, false)
	}
	if w.sgu != nil {
		st.sgu = grow(st.sgu, N*2*Fe)
		st.sh = grow(st.sh, N*Fe)
		st.ssg = grow(st.ssg, N*Fe)
		m.prec.MatmulForward(st.sgu, x, w.sgu, N, D, 2*Fe, false)
		m.moe.task = swigluTask{h: st.sh, sig: st.ssg, gu: st.sgu, F: Fe}
		kernels.ParallelForTask(N, 16, &m.moe.task)
		m.prec.MatmulForward(out, st.sh, w.sdown, N, Fe, D, true)
	}
	// out_t += Σ_j g_tj·y_row(t,j), assignments in token then rank order
	m.moe.scatter(out, st.y, st.gate[:N*K], st.row[:N*K], N, K, D)

	// auxiliary losses of this micro-batch
	var bal, zl float64
	for i := 0; i < E; i++ {
		bal += st.selCount[i] / float64(N*K) * st.psum[i] / float64(N)
	}
	for _, v := range st.lse[:N] {
		zl += float64(v) * float64(v)
	}
	st.aux = c.MoEAuxLossAlpha*float64(E)*bal + c.MoERouterZLoss*zl/float64(N)
	if vitals {
		m.moeVitals(st, st.selCount, st.psum, N, st.dropped)
	}
}

// moeBackward propagates dout [N, D] (the gradient at the block's output)
// through the MoE block of layer l, overwriting dx [N, D] with the
// gradient at its input x and adding the weight gradients into Grads.
//
//	experts:  dy_r = g·dout_t,  ∂g = dout_t·y_r, then SwiGLU/GEMM backward per expert
//	renorm:   ∂p_j = (∂g_j − Σ_m g_m·∂g_m)/S over the selected j (moe_norm_topk), else ∂p_j = ∂g_j
//	balance:  ∂p_ti += scale·α·E·fᵢ/N   (fᵢ over the step's micro-batches so far)
//	softmax:  ∂z_ti = p_ti·(∂p_ti − Σ_m p_tm·∂p_tm)
//	z-loss:   ∂z_ti += scale·β·2·lse_t·p_ti/N
//	router:   dx += ∂z·W_r,  ∂W_r += ∂zᵀ·x
func (m *Model) moeBackward(l int, x, dout, dx []float32) {
	c := m.Cfg
	st := m.moe.layers[m.moe.idx[l]]
	w, g := m.p.layers[l].moe, m.g.layers[l].moe
	N := st.n
	D, E, K, Fe := c.DModel, c.MoEExperts, c.MoETopK, c.MoEExpertHidden
	R := st.off[E]
	s := &m.moe
	s.dy = grow(s.dy, R*D)
	s.dh = grow(s.dh, R*Fe)
	s.dgu = grow(s.dgu, R*2*Fe)
	s.dxe = grow(s.dxe, R*D)
	s.dz = grow(s.dz, N*E)
	s.dp = grow(s.dp, E)
	s.dgate = grow(s.dgate, N*K)

	// dy_r = g_a·dout_t and ∂g_a = dout_t·y_r for each kept assignment a
	s.tRows = rowsTask{op: rowsGateBack, dy: s.dy, dgate: s.dgate[:N*K], dout: dout, y: st.y, gate: st.gate[:N*K], idx: st.row[:N*K], K: K, C: D}
	kernels.ParallelForTask(N*K, 16, &s.tRows)
	if m.gw && g.bias != nil { // the routing bias has a gradient slot no pass writes
		clear(g.bias)
	}
	for e := 0; e < E; e++ {
		r0, r1 := st.off[e], st.off[e+1]
		if r1 == r0 {
			if m.gw { // an idle expert's gradient is zero, not the previous step's
				clear(g.down[e])
				clear(g.gu[e])
			}
			continue
		}
		n := r1 - r0
		m.prec.MatmulBackwardBeta(s.dh[r0*Fe:r1*Fe], g.down[e], s.dy[r0*D:r1*D], st.h[r0*Fe:r1*Fe], w.down[e], n, Fe, D, false, m.gradBeta())
		s.task = swigluTask{h: s.dh[r0*Fe : r1*Fe], sig: st.sig[r0*Fe : r1*Fe], gu: st.gu[r0*2*Fe : r1*2*Fe], dgu: s.dgu[r0*2*Fe : r1*2*Fe], F: Fe, back: true}
		kernels.ParallelForTask(n, 16, &s.task)
		m.prec.MatmulBackwardBeta(s.dxe[r0*D:r1*D], g.gu[e], s.dgu[r0*2*Fe:r1*2*Fe], st.xe[r0*D:r1*D], w.gu[e], n, D, 2*Fe, false, m.gradBeta())
	}
	clear(dx[:N*D])
	s.scatter(dx, s.dxe, nil, st.row[:N*K], N, K, D)
	if w.sgu != nil {
		s.sdh = grow(s.sdh, N*Fe)
		s.sdgu = grow(s.sdgu, N*2*Fe)
		m.prec.MatmulBackwardBeta(s.sdh, g.sdown, dout, st.sh, w.sdown, N, Fe, D, false, m.gradBeta())
		s.task = swigluTask{h: s.sdh, sig: st.ssg, gu: st.sgu, dgu: s.sdgu, F: Fe, back: true}
		kernels.ParallelForTask(N, 16, &s.task)
		m.prec.MatmulBackwardBeta(dx, g.sgu, s.sdgu, x, w.sgu, N, D, 2*Fe, true, m.gradBeta())
	}

	// router
	tok := float64(st.accTok + N)
	sel := float64(K) * tok
	alpha := float32(0)
	if c.MoEAuxLossAlpha > 0 {
		alpha = s.scale * float32(c.MoEAuxLossAlpha*float64(E)/float64(N))
	}
	beta := s.scale * float32(2*c.MoERouterZLoss/float64(N))
	for t := 0; t < N; t++ {
		dp := s.dp
		for i := range dp {
			dp[i] = alpha * float32((st.accSel[i]+st.selCount[i])/sel)
		}
		gt := st.gate[t*K : (t+1)*K]
		dg := s.dgate[t*K : (t+1)*K]
		se := st.sel[t*K : (t+1)*K]
		p := st.probs[t*E : (t+1)*E]
		if c.MoENormTopK {
			var S, gdg float32
			for j, e := range se {
				S += p[e]
				gdg += gt[j] * dg[j]
			}
			for j, e := range se {
				dp[e] += (dg[j] - gdg) / S
			}
		} else {
			for j, e := range se {
				dp[e] += dg[j]
			}
		}
		var pdp float32
		for i, v := range p {
			pdp += v * dp[i]
		}
		zt := beta * st.lse[t]
		dz := s.dz[t*E : (t+1)*E]
		for i, v := range p {
			dz[i] = v*(dp[i]-pdp) + zt*v
		}
	}
	ops.MatmulBackwardStridedBeta(dx, g.router, s.dz, E, x, w.router, N, D, E, true, m.gradBeta())

	// the step's accumulators, then the vitals over them
	for i := 0; i < E; i++ {
		st.accSel[i] += st.selCount[i]
		st.accP[i] += st.psum[i]
	}
	st.accTok += N
	st.accDrop += st.dropped
	m.moeVitals(st, st.accSel, st.accP, st.accTok, st.accDrop)
}

// moeVitals fills the layer's MoEVitals from selection counts, summed
// router probabilities, tokens and dropped assignments.
func (m *Model) moeVitals(st *moeLayer, counts, psum []float64, tokens, dropped int) {
	c := m.Cfg
	E, K := c.MoEExperts, c.MoETopK
	v := &m.vit.MoE[m.moe.idx[st.layer]]
	total := float64(tokens * K)
	var bal, ent, mean, ss float64
	mn, mx := math.Inf(1), math.Inf(-1)
	dead := 0
	for i := 0; i < E; i++ {
		n := counts[i]
		bal += n / total * psum[i] / float64(tokens)
		if n > 0 {
			q := n / total
			ent -= q * math.Log(q)
		} else {
			dead++
		}
		mn, mx = math.Min(mn, n), math.Max(mx, n)
		mean += n
	}
	mean /= float64(E)
	for i := 0; i < E; i++ {
		ss += (counts[i] - mean) * (counts[i] - mean)
	}
	v.LoadBalanceLoss = float32(float64(E) * bal)
	v.UtilEntropy = 1
	if E > 1 {
		v.UtilEntropy = float32(ent / math.Log(float64(E)))
	}
	v.TokensMin, v.TokensMax, v.TokensStd = float32(mn), float32(mx), float32(math.Sqrt(ss/float64(E)))
	v.DeadExperts = dead
	v.DropRate = float32(float64(dropped) / total)
}

// UpdateRouterBias applies the DeepSeek-V3 auxiliary-loss-free balancing
// update after an applied optimizer step: for each MoE layer with
// moe_balance = bias, b_i += γ·sign(mean load − load_i), the loads being
// the selections of the step's global batch (since ZeroGrads). It does
// nothing for other models.
func (m *Model) UpdateRouterBias() {
	c := m.Cfg
	if !c.moeBias() {
		return
	}
	rate := float32(c.MoEBiasRate)
	for _, st := range m.moe.layers {
		b := m.p.layers[st.layer].moe.bias
		var mean float64
		for _, n := range st.accSel {
			mean += n
		}
		mean /= float64(len(st.accSel))
		for i, n := range st.accSel {
			switch {
			case n < mean:
				b[i] += rate
			case n > mean:
				b[i] -= rate
			}
		}
	}
}

// active reports whether the model has mixture-of-experts layers (the
// forward-only LogProbs and the cached Decoder fall back to the full
// forward for them).
func (s *moeState) active() bool { return len(s.layers) > 0 }
