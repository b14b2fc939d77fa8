package stepvitals

import (
	"math"
	"slices"

	"github.com/kestrel-lm/kestrel/internal/runlog"
)

// stepTailWindow is the number of recent steps step_time_p50 and
// step_time_p95 are taken over (as grad_clip_rate's last 100 steps).
const stepTailWindow = 100

// Tails holds the step times of the last stepTailWindow steps of this
// invocation (a resume starts it empty).
type Tails struct {
	ring    [stepTailWindow]float64
	n, next int
	sorted  []float64
}

// add records a step time and returns the p50 and p95 over the window
// (nearest rank: the smallest value with at least p of the window at or
// below it).
func (t *Tails) add(x float64) (p50, p95 float64) {
	t.ring[t.next] = x
	t.next = (t.next + 1) % stepTailWindow
	t.n = min(t.n+1, stepTailWindow)
	t.sorted = append(t.sorted[:0], t.ring[:t.n]...)
	slices.Sort(t.sorted)
	return nearestRank(t.sorted, 0.50), nearestRank(t.sorted, 0.95)
}

// nearestRank is the p-quantile of the sorted xs by nearest rank.
func nearestRank(xs []float64, p float64) float64 {
	i := int(math.Ceil(p*float64(len(xs)))) - 1
	return xs[min(max(i, 0), len(xs)-1)]
}

// Fill sets the step-time tails and the fractions of step_time
// in m.Vitals: forward_frac, backward_frac, optimizer_frac, comm_frac
// (data-parallel: allreduce_time) and other_frac, what no phase timed
// (the data fraction is dataloader_stall_frac). Nothing is set for a step
// without a measured step_time.
func (t *Tails) Fill(m *runlog.Step) {
	if !(m.StepTime > 0) {
		return
	}
	v := &m.Vitals
	v.StepTimeP50, v.StepTimeP95 = t.add(m.StepTime)
	v.ForwardFrac, v.BackwardFrac, v.OptimizerFrac = m.ForwardTime/m.StepTime, m.BackwardTime/m.StepTime, m.OptimizerTime/m.StepTime
	rest := 1 - v.ForwardFrac - v.BackwardFrac - v.OptimizerFrac - m.DataWaitTime/m.StepTime
	if ar, ok := m.PerLayer["allreduce_time"]; ok {
		c := ar / m.StepTime
		v.CommFrac = &c
		rest -= c
	}
	v.OtherFrac = max(rest, 0)
	v.FracMeasured = true
}
