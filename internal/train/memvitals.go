package train

import (
	"fmt"

	"github.com/kestrel-lm/kestrel/internal/runlog"
	"github.com/kestrel-lm/kestrel/internal/stepvitals"
)

// preflightEstimate is the memory estimate of the run that Preflight
// checks against the memory available (and manifest.json records as
// memory_estimate_bytes, beside the measured peak rss_bytes).
func preflightEstimate(o Options) (Memory, error) {
	est, err := EstimateMemory(o.Model, o.Train, o.Optim.EMABeta > 0)
	if err != nil {
		return Memory{}, fmt.Errorf("train: memory estimate: %w", err)
	}
	if o.Optim.Name == "muon" {
		// Muon's new momentum buffers (one float32 per parameter); its
		// Newton–Schulz scratch, 4 × the largest matrix, is small beside it.
		est.Optimizer += est.Params
	}
	return est, nil
}

// stepVitals completes m after the step: the [debug] leak of step s
// first (so that the step's rss_bytes shows it), then the step-time tails
// and fractions, the memory, lm_head_norm and opt_state_finite.
func (t *trainer) stepVitals(s int, m *runlog.Step) {
	t.faults.Leak(s)
	t.tails.Fill(m)
	t.mem.Sample(&m.Vitals)
	stepvitals.FillOpt(m, t.opt.Spans(), t.opt.SpanSquares(), t.o.Model.Tied)
}
