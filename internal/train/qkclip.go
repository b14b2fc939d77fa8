package train

import (
	"fmt"
	"math"

	"github.com/kestrel-lm/kestrel/internal/model"
	"github.com/kestrel-lm/kestrel/internal/runlog"
)

// qkClipper runs QK-Clip (model.QKClip, optim.qk_clip_tau) after the
// optimizer step on the max attention logit per layer and head over the
// step's micro-batches (each forward pass overwrites the model's vitals,
// so observe takes the running max after every pass).
type qkClipper struct {
	c    *model.QKClip
	tau  float64
	max  [][]float32 // [layer][head], -Inf before the step's first pass
	seen bool
}

// newQKClipper returns nil when tau is 0 (QK-Clip off).
func newQKClipper(tau float64, cfg model.Config, ts []model.Tensor) (*qkClipper, error) {
	if tau == 0 {
		return nil, nil
	}
	c, err := model.NewQKClip(cfg, ts)
	if err != nil {
		return nil, fmt.Errorf("train: optim.qk_clip_tau: %w", err)
	}
	q := &qkClipper{c: c, tau: tau, max: make([][]float32, cfg.NLayers)}
	for l := range q.max {
		q.max[l] = make([]float32, cfg.NHeads)
	}
	q.reset()
	return q, nil
}

func (q *qkClipper) reset() {
	for _, hs := range q.max {
		for h := range hs {
			hs[h] = float32(math.Inf(-1))
		}
	}
	q.seen = false
}

// observe folds one forward pass's vitals into the step's max.
func (q *qkClipper) observe(v *model.Vitals) {
	if q == nil || v == nil || len(v.MaxAttnLogit) != len(q.max) {
		return
	}
	for l, hs := range v.MaxAttnLogit {
		if len(hs) != len(q.max[l]) {
			continue
		}
		for h, x := range hs {
			// NaN propagates so that Apply leaves the head alone.
			if x > q.max[l][h] || x != x {
				q.max[l][h] = x
			}
		}
	}
	q.seen = true
}

// apply clips the heads over τ (not on a skipped step, which changes no
// weights), records qk_clipped_heads on m and resets for the next step.
func (q *qkClipper) apply(params []float32, skipped bool, m *runlog.Step) error {
	if q == nil {
		return nil
	}
	defer q.reset()
	n := 0
	if q.seen && !skipped {
		var err error
		if n, err = q.c.Apply(params, q.max, q.tau); err != nil {
			return fmt.Errorf("step %d: %w", m.Step, err)
		}
	}
	m.QKClippedHeads = &n
	return nil
}
