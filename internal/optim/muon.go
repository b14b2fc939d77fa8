package optim

import (
	"errors"
	"fmt"
	"math"
	"path"

	"github.com/kestrel-lm/kestrel/internal/kernels"
)

// Muon (optim.name = "muon") updates every 2-D weight matrix with Muon and
// everything else (embeddings, norms, biases, lm_head and any tensor named
// or matched by a pattern in optim.muon_exclude) with AdamW, inside the one optimizer: the same
// gradient norm, gradient clipping, skip-step test, update-norm clipping,
// telemetry and checkpoint state serve both groups. A Muon matrix keeps its
// momentum buffer in M (laid out like the parameters, as Adam's first
// moment) and leaves its V at zero, so checkpoints, warm-start and
// necromancy carry it unchanged.
//
// For a matrix W of shape m×n with gradient G (after gradient clipping),
// momentum μ, learning rate η and weight decay λ (Moonlight's form):
//
//	B ← μ·B + G                      momentum buffer (held in M)
//	D = G + μ·B  (Nesterov)  or  D = B
//	O = NS₅(D)                       ≈ U·Vᵀ of D = U·Σ·Vᵀ
//	u = s·√max(m, n)·O + λ·W         s = optim.muon_rms_scale (0.2)
//	W ← W − η·u
//
// NS₅ is the quintic Newton–Schulz iteration on X₀ = D/(‖D‖_F + ε), worked
// on the wide orientation (Dᵀ when m > n, so X·Xᵀ is the smaller Gram):
//
//	A = X·Xᵀ,  X ← a·X + (b·A + c·A·A)·X,   (a, b, c) = (3.4445, −4.7750, 2.0315)
//
// Each step maps every singular value σ of X to p(σ) = a·σ + b·σ³ + c·σ⁵,
// pushing them from (0, 1] into roughly [0.7, 1.2] in five steps without
// changing the singular vectors. An orthogonal m×n matrix has entries of RMS
// 1/√max(m, n); the factor s·√max(m, n) brings its RMS to s ≈ 0.2, the RMS
// of a typical AdamW update, so AdamW learning rates carry over (Moonlight,
// "Muon is Scalable for LLM Training", 2025).
//
// kestrel's fused projections are separate tensors (q_proj, k_proj, v_proj;
// gate_proj, up_proj), so each block is orthogonalised on its own, as the
// reference implementations (which keep them as separate nn.Linear) do.

// Muon's quintic Newton–Schulz coefficients (Keller Jordan's Muon).
const (
	nsA = 3.4445
	nsB = -4.7750
	nsC = 2.0315
)

// muonMat is one span updated by Muon: rows×cols as stored (row-major).
type muonMat struct {
	span       int
	rows, cols int
}

// setupMuon picks the Muon spans of o (Kind "matrix", 2-D shape, not in
// cfg.MuonExclude) and allocates the scratch. A matrix span without a 2-D
// Shape of its Size is an error naming it.
func (o *AdamW) setupMuon() error {
	if o.cfg.Name != "muon" {
		return nil
	}
	o.muonSpan = make([]bool, len(o.spans))
	var big int
	for i, s := range o.spans {
		if s.Kind != "matrix" || muonExcluded(o.cfg.MuonExclude, s.Name) {
			continue
		}
		if len(s.Shape) != 2 || s.Shape[0]*s.Shape[1] != s.Size || s.Size == 0 {
			return fmt.Errorf("optim: optim.name = \"muon\": matrix %s needs a 2-D shape of %d elements, got %v", s.Name, s.Size, s.Shape)
		}
		o.muon = append(o.muon, muonMat{span: i, rows: s.Shape[0], cols: s.Shape[1]})
		o.muonSpan[i] = true
		big = max(big, s.Size)
	}
	o.mbuf = make([]float32, len(o.M))
	o.ns = newNSWork(big)
	return nil
}

// muonExcluded reports whether name is in optim.muon_exclude, as a name or
// a path.Match pattern ("model.layers.*.mlp.gate.weight": '*' spans dots).
func muonExcluded(ex []string, name string) bool {
	for _, e := range ex {
		if ok, _ := path.Match(e, name); ok || e == name {
			return true
		}
	}
	return false
}

// IsMuon reports whether span i is updated by Muon (false under AdamW).
func (o *AdamW) IsMuon(i int) bool { return o.muonSpan != nil && o.muonSpan[i] }

// muonDirections writes, for every Muon span, its new momentum buffer into
// o.mbuf and its update direction s·√max(m,n)·NS₅(D) + λ·W into o.u
// (gs is the gradient-clipping scale). M and the parameters are not
// written: a non-finite update must leave them untouched.
func (o *AdamW) muonDirections(params, grads []float32, gs float64) {
	mu := float32(o.cfg.MuonMomentum)
	g32 := float32(gs)
	for _, mm := range o.muon {
		s := o.spans[mm.span]
		lo, hi := s.Offset, s.Offset+s.Size
		g, m, b, d := grads[lo:hi], o.M[lo:hi], o.mbuf[lo:hi], o.u[lo:hi]
		for j := range g {
			gj := g[j] * g32
			b[j] = mu*m[j] + gj
			if o.cfg.MuonNesterov {
				d[j] = gj + mu*b[j]
			} else {
				d[j] = b[j]
			}
		}
		o.ns.orthogonalize(d, mm.rows, mm.cols, o.cfg.MuonNSSteps, float32(o.cfg.MuonEps))
		scale := float32(o.cfg.MuonRMSScale * math.Sqrt(float64(max(mm.rows, mm.cols))))
		wd := float32(o.wd[mm.span])
		p := params[lo:hi]
		for j := range d {
			d[j] = scale*d[j] + wd*p[j]
		}
	}
}

// nsWork is the scratch of the Newton–Schulz iteration, sized for the
// largest Muon matrix so steps allocate nothing.
type nsWork struct {
	x, y, a, b []float32
}

func newNSWork(n int) *nsWork {
	// X and its next iterate hold n = m·n values; the Gram matrices are
	// r×r with r = min(m, n), so r² ≤ n as well.
	return &nsWork{x: make([]float32, n), y: make([]float32, n), a: make([]float32, n), b: make([]float32, n)}
}

// orthogonalize replaces d (rows×cols, row-major) by steps quintic
// Newton–Schulz iterations on d/(‖d‖_F + eps). The products run on
// kernels.Sgemm; the Frobenius norm is summed in float64 in order.
func (w *nsWork) orthogonalize(d []float32, rows, cols, steps int, eps float32) {
	r, c := rows, cols
	tr := rows > cols
	if tr {
		r, c = cols, rows
	}
	n := r * c
	x, y := w.x[:n], w.y[:n]
	var ss float64
	for _, v := range d {
		ss += float64(v) * float64(v)
	}
	inv := 1 / (float32(math.Sqrt(ss)) + eps)
	if tr {
		// X = Dᵀ: D is c×r as stored, X[i][j] = D[j][i].
		for i := 0; i < r; i++ {
			for j := 0; j < c; j++ {
				x[i*c+j] = d[j*r+i] * inv
			}
		}
	} else {
		for i, v := range d {
			x[i] = v * inv
		}
	}
	a, b := w.a[:r*r], w.b[:r*r]
	for range steps {
		// A = X·Xᵀ (r×r); B = b·A + c·A·A; Y = a·X + B·X.
		kernels.Sgemm(false, true, r, r, c, 1, x, c, x, c, 0, a, r)
		copy(b, a)
		kernels.Sgemm(false, false, r, r, r, nsC, a, r, a, r, nsB, b, r)
		for i, v := range x {
			y[i] = nsA * v
		}
		kernels.Sgemm(false, false, r, c, r, 1, b, r, x, c, 1, y, c)
		x, y = y, x
	}
	if tr {
		for i := 0; i < r; i++ {
			for j := 0; j < c; j++ {
				d[j*r+i] = x[i*c+j]
			}
		}
	} else {
		copy(d, x)
	}
}

// Orthogonalize returns steps quintic Newton–Schulz iterations of Muon on
// g (rows×cols, row-major) normalised by its Frobenius norm (+eps), as a
// new slice: an approximation of U·Vᵀ for g = U·Σ·Vᵀ.
func Orthogonalize(g []float32, rows, cols, steps int, eps float64) ([]float32, error) {
	if rows <= 0 || cols <= 0 || len(g) != rows*cols {
		return nil, fmt.Errorf("optim: orthogonalize: %d values for a %d×%d matrix", len(g), rows, cols)
	}
	d := append([]float32(nil), g...)
	newNSWork(len(g)).orthogonalize(d, rows, cols, steps, float32(eps))
	return d, nil
}

// validateMuon checks the Muon fields, naming them as in the config file.
func (c Config) validateMuon() error {
	var errs []error
	bad := func(f string, args ...any) { errs = append(errs, fmt.Errorf(f, args...)) }
	switch c.Name {
	case "", "adamw", "nadamw", "adamc": // "" is a Config literal's zero value: AdamW
		return nil
	case "muon":
	default:
		return fmt.Errorf("optim.name: unknown optimizer %q (want adamw, nadamw, adamc or muon)", c.Name)
	}
	if !(c.MuonMomentum >= 0 && c.MuonMomentum < 1) {
		bad("optim.muon_momentum must be in [0, 1), got %g", c.MuonMomentum)
	}
	if c.MuonNSSteps < 1 || c.MuonNSSteps > 20 {
		bad("optim.muon_ns_steps must be in [1, 20], got %d", c.MuonNSSteps)
	}
	if !(c.MuonEps > 0) || math.IsInf(c.MuonEps, 0) {
		bad("optim.muon_eps must be a finite number > 0, got %g", c.MuonEps)
	}
	if !(c.MuonRMSScale > 0) || math.IsInf(c.MuonRMSScale, 0) {
		bad("optim.muon_rms_scale must be a finite number > 0, got %g", c.MuonRMSScale)
	}
	for i, n := range c.MuonExclude {
		if n == "" {
			bad("optim.muon_exclude[%d] is empty", i)
		} else if _, err := path.Match(n, ""); err != nil {
			bad("optim.muon_exclude[%d] = %q: bad pattern: %v", i, n, err)
		}
	}
	return errors.Join(errs...)
}

// muonSums returns a Muon segment's sums of squares of the update u, of
// the parameters and of the new momentum buffer, in float64 in order.
func (o *AdamW) muonSums(sg seg, params []float32) (su, sp, sm float64) {
	for j := sg.lo; j < sg.hi; j++ {
		u, p, b := float64(o.u[j]), float64(params[j]), float64(o.mbuf[j])
		su += u * u
		sp += p * p
		sm += b * b
	}
	return su, sp, sm
}
