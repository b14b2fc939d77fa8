package model

import (
	"errors"

	"github.com/kestrel-lm/kestrel/internal/kernels"
)

// Replica returns a model that shares m's parameters and owns everything
// a pass writes: its gradient buffer, activation arena, vitals, attention
// scratch and pool tasks. A replica and m (or two replicas) may run
// ForwardBackward at the same time on different goroutines while nobody
// writes the parameters; each accumulates into its own Grads
// (internal/replicas runs a step's micro-batches side by side on them).
// It starts with m's Cfg and precision: call Follow before each step, as
// the trainer changes the z-loss weight between steps. A
// mixture-of-experts model has no replicas: its routing statistics and
// router-bias update sum the step's micro-batches inside one model.
func (m *Model) Replica() (*Model, error) {
	if m.Cfg.MoEEvery > 0 {
		return nil, errors.New("model: a mixture-of-experts model has no replicas (its routing statistics sum a step's micro-batches inside one model)")
	}
	r := &Model{Cfg: m.Cfg, Params: m.Params, geometry: m.geometry, p: m.p, headRows: m.headRows, prec: m.prec}
	r.Grads = kernels.MakeBuffer(len(m.Grads))
	r.g = r.views(r.Grads)
	r.vit = newVitals(m.Cfg)
	r.initMoE()
	return r, nil
}

// Follow makes replica r compute as m does now: m's Cfg (the z-loss
// weight the knobs set) and precision.
func (r *Model) Follow(m *Model) {
	r.Cfg, r.prec, r.headRows = m.Cfg, m.prec, m.headRows
}
