package report

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/kestrel-lm/kestrel/internal/runlog"
)

// writeOnTrack writes the "On track" section: the projection of the run's
// own loss-vs-tokens fit (loss_projection_final ± loss_projection_se, as
// the trainer recorded it when it was made) at a quarter, half and the end
// of the run against the real final train loss, and the critical batch
// from the gradient noise scale. Nothing when the run recorded neither.
func writeOnTrack(b *strings.Builder, log *runlog.Log) {
	ps, proj, _ := log.Series("loss_projection_final", "step")
	_, crit, _ := log.Series("grad_noise_scale_tokens", "step")
	if len(proj) == 0 && len(crit) == 0 {
		return
	}
	b.WriteString("## On track\n\n")
	if len(proj) > 0 {
		_, steps, _ := log.Last("train_loss_raw") // the last step line
		b.WriteString("The run's own fit of train loss against tokens, L = E + A·(t/t0)^(−α), fitted robustly to the stable phase after warm-up and projected to the planned end (loss.png draws loss_fit and loss_projection_final; a planned decay usually ends below the projection; docs/runbooks.md#off_track):\n\n")
		b.WriteString("| projection made at step | projected final train loss | ± (jackknife SE) |\n|---|---|---|\n")
		sxs, se, _ := log.Series("loss_projection_se", "step")
		for _, f := range []float64{0.25, 0.5, 1} {
			i := atOrAfter(ps, f*steps)
			if i < 0 {
				continue
			}
			e := "–"
			if j := atOrAfter(sxs, ps[i]); j >= 0 && sxs[j] == ps[i] {
				e = f3(se[j])
			}
			fmt.Fprintf(b, "| %s (%.0f%%) | %s | %s |\n", f3(ps[i]), 100*ps[i]/steps, f3(proj[i]), e)
		}
		fmt.Fprintf(b, "\nReal final train loss (median of train_loss_raw over the last 50 steps): %s.", f3(lastMedian(log, "train_loss_raw", 50)))
		if res, rs, ok := log.Last("scaling_law_residual"); ok {
			fmt.Fprintf(b, " Last judged residual to the fit (scaling_law_residual, step %s): %s.", f3(rs), f3(res))
		}
		b.WriteString("\n\n")
	}
	if len(crit) > 0 {
		fmt.Fprintf(b, "Gradient noise scale: critical batch ≈ %s tokens (B_simple = %s sequences at the end, against a batch of %s sequences; McCandlish et al.: a batch well below it trains nearly as well per token, one well above it wastes tokens).\n\n",
			f3(crit[len(crit)-1]), f3(last(log, "grad_noise_scale")), f3(last(log, "batch_size")))
	} else {
		b.WriteString("Gradient noise scale: not measured (it needs train.micro_batch below the batch: two or more micro-batches per step).\n\n")
	}
}

// atOrAfter is the index of the first x ≥ v in the sorted xs, -1 if none.
func atOrAfter(xs []float64, v float64) int {
	i := sort.SearchFloat64s(xs, v)
	if i == len(xs) {
		return -1
	}
	return i
}

// lastMedian is the median of the last n values of name.
func lastMedian(log *runlog.Log, name string, n int) float64 {
	_, ys, _ := log.Series(name, "step")
	if len(ys) == 0 {
		return math.NaN()
	}
	ys = append([]float64(nil), ys[max(0, len(ys)-n):]...)
	sort.Float64s(ys)
	if len(ys)%2 == 1 {
		return ys[len(ys)/2]
	}
	return (ys[len(ys)/2-1] + ys[len(ys)/2]) / 2
}
