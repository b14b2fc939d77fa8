package ops

import (
	"math"

	"github.com/kestrel-lm/kestrel/internal/kernels"
)

// ---------------------------------------------------------- mixture of experts
//
// The routing ops of a mixture-of-experts block (internal/model/moe.go):
// the router softmax, top-k selection, and the gather / gated scatter of
// token rows to and from the experts' contiguous blocks. An assignment a
// is token t = a / K, rank j = a % K; row[a] is the row of its expert
// block it was dispatched to, or −1 when it was dropped.

// SoftmaxRows turns rows [s, e) of z [N, C] into their softmax in place and
// writes each row's logsumexp into lse:
//
//	lse_t = log Σ_i exp(z_ti),   p_ti = exp(z_ti − lse_t)
//
// Its backward is ∂z_ti = p_ti·(∂p_ti − Σ_m p_tm·∂p_tm), and the gradient
// of a loss β·lse_t² adds 2β·lse_t·p_ti (written out by the caller).
func SoftmaxRows(z, lse []float32, C, s, e int) {
	for t := s; t < e; t++ {
		row := z[t*C : (t+1)*C]
		mx := row[0]
		for _, v := range row {
			mx = max(mx, v)
		}
		var sum float64
		for i, v := range row {
			x := math.Exp(float64(v - mx))
			row[i] = float32(x)
			sum += x
		}
		inv := float32(1 / sum)
		for i := range row {
			row[i] *= inv
		}
		lse[t] = mx + float32(math.Log(sum))
	}
}

// TopK writes into sel (len k) the indices of the k largest p_i + bias_i
// (bias may be nil), best first; ties go to the lower index. It has no
// gradient (a selection).
func TopK(sel []int32, p, bias []float32) {
	for j := range sel {
		best := -1
		var bv float32
		for i, v := range p {
			if bias != nil {
				v += bias[i]
			}
			if best >= 0 && v <= bv {
				continue
			}
			taken := false
			for _, e := range sel[:j] {
				if int(e) == i {
					taken = true
					break
				}
			}
			if !taken {
				best, bv = i, v
			}
		}
		sel[j] = int32(best)
	}
}

// GatherRows copies, for rows r in [s, e), src row tok[r] into dst row r:
// dst[r, :] = src[tok[r], :] (C columns). Its backward is ScatterAddRows.
func GatherRows(dst, src []float32, tok []int32, C, s, e int) {
	for r := s; r < e; r++ {
		t := int(tok[r])
		copy(dst[r*C:(r+1)*C], src[t*C:(t+1)*C])
	}
}

// ScatterAddRows adds the dispatched rows back to their tokens:
//
//	out[t, :] += Σ_j gate[t·K+j]·y[row[t·K+j], :]   over kept assignments (row ≥ 0)
//
// for tokens t in [s, e); gate nil means weight 1 (the backward of
// GatherRows). Each token sums its assignments in rank order, so the
// result does not depend on how the tokens are split over threads.
func ScatterAddRows(out, y, gate []float32, row []int32, K, C, s, e int) {
	for t := s; t < e; t++ {
		o := out[t*C : (t+1)*C]
		for a := t * K; a < (t+1)*K; a++ {
			r := int(row[a])
			if r < 0 {
				continue
			}
			g := float32(1)
			if gate != nil {
				g = gate[a]
			}
			kernels.Axpy(g, y[r*C:(r+1)*C], o)
		}
	}
}

// GateBackwardRows is the backward of the gated scatter out_t += g_a·y_r:
//
//	dy[r, :] = g_a·dout[t, :],   dgate[a] = dout[t, :]·y[r, :]
//
// for every kept assignment a in [s, e) (row r ≥ 0); a dropped assignment
// gets dgate[a] = 0 and no row.
func GateBackwardRows(dy, dgate, dout, y, gate []float32, row []int32, K, C, s, e int) {
	for a := s; a < e; a++ {
		r := int(row[a])
		if r < 0 {
			dgate[a] = 0
			continue
		}
		t := a / K
		d := dout[t*C : (t+1)*C]
		yr := y[r*C : (r+1)*C]
		dgate[a] = kernels.Dot(d, yr)
		dr := dy[r*C : (r+1)*C]
		g := gate[a]
		for i, v := range d {
			dr[i] = g * v
		}
	}
}
