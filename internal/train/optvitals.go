package train

import (
	"math"

	"github.com/kestrel-lm/kestrel/internal/optim"
	"github.com/kestrel-lm/kestrel/internal/runlog"
)

// fillOptVitals sets lm_head_norm (the L2 norm of lm_head.weight before
// the update, or of the token embedding when the embeddings are tied; left
// out of a skipped step, whose sums the optimizer does not take) and
// opt_state_finite: whether every Adam moment is finite, read from the
// moment norms the optimizer takes anyway (a sum of squares in float64 is
// finite exactly when every moment is), so the check costs nothing.
func fillOptVitals(m *runlog.Step, spans []optim.Span, sq []optim.SpanSquares, tied bool) {
	head := "lm_head.weight"
	if tied {
		head = "model.embed_tokens.weight"
	}
	if len(sq) == len(spans) {
		for i, s := range spans {
			if s.Name == head && sq[i].Param > 0 {
				m.Vitals.LMHeadNorm = math.Sqrt(sq[i].Param)
			}
		}
	}
	ok := !math.IsNaN(m.AdamMNorm) && !math.IsInf(m.AdamMNorm, 0) && !math.IsNaN(m.AdamVNorm) && !math.IsInf(m.AdamVNorm, 0)
	m.Vitals.OptStateFinite = &ok
}
