package train

import (
	"context"
	"errors"
	"time"

	"github.com/kestrel-lm/kestrel/internal/comm"
	"github.com/kestrel-lm/kestrel/internal/runlog"
	"github.com/kestrel-lm/kestrel/internal/stepvitals"
)

// debugHang blocks rank debug.hang_rank at step debug.hang_at_step until ctx
// ends, as a hung rank would (the others' collectives then time out).
func (t *trainer) debugHang(ctx context.Context, s int) {
	d := t.o.Debug
	if t.dp == nil || d.HangAtStep != s || d.HangRank != t.dp.rank {
		return
	}
	t.log.Warn("debug.hang_at_step: this rank stops here until the run is killed", "step", s, "rank", t.dp.rank)
	<-ctx.Done()
}

// ErrStoppedByRank0 is what ranks other than 0 return when rank 0 stopped
// the run (its monitor's SEV0, a failed observer).
var ErrStoppedByRank0 = errors.New("train: rank 0 stopped the run")

// reduceStep all-reduces what each rank measured on its rows: the weighted
// loss and z-loss, counted tokens, padding and per-source tokens.
func (t *trainer) reduceStep(s int, loss, zl *float64, tokens, pads *int, perSrc []int) error {
	if err := t.dp.finishGrads(s); err != nil {
		return err
	}
	xs := make([]float64, 4+len(perSrc))
	xs[0], xs[1], xs[2], xs[3] = *loss, *zl, float64(*tokens), float64(*pads)
	for i, c := range perSrc {
		xs[4+i] = float64(c)
	}
	if err := t.dp.sum(s, "loss and token counts", xs); err != nil {
		return err
	}
	*loss, *zl, *tokens, *pads = xs[0], xs[1], int(xs[2]), int(xs[3])
	for i := range perSrc {
		perSrc[i] = int(xs[4+i])
	}
	return nil
}

// rankVitals gathers every rank's times of step s and, on rank 0, adds the
// per-rank vitals, the straggler ratio and the all-reduce volume and time
// to m. A rank's step time is its time in step() less the time it waited
// in collectives: the time it needed itself, so the slow rank stands out
// (the others' waiting for it would even them all out).
func (t *trainer) rankVitals(s int, m *runlog.Step) error {
	if t.dp == nil {
		return nil
	}
	busy := time.Since(t.stepStart) - t.dp.wait
	mine := rankTimes{Step: busy.Seconds(), Compute: m.ForwardTime + m.BackwardTime, AllReduce: t.dp.wait.Seconds(), DataWait: m.DataWaitTime}
	ts, err := t.dp.gatherTimes(s, mine)
	if err != nil {
		return err
	}
	if m.PerLayer == nil {
		m.PerLayer = map[string]float64{}
	}
	rankMetrics(m.PerLayer, ts, t.dp.bytes)
	m.PerLayer["allreduce_time"] = t.dp.wait.Seconds()
	return nil
}

// reduceVitals makes the last pass's vitals those of the whole global
// batch's last micro-batches: max attention logit, residual RMS and outlier
// rate the max over ranks, attention entropy the min (the worst), so rank
// 0's metrics and the monitor's attention rules see every rank's batch.
// (logit_lse_mean stays rank 0's.)
func (t *trainer) reduceVitals(s int) error {
	v := t.net.Vitals()
	if t.dp == nil || v == nil {
		return nil
	}
	xs := stepvitals.PackExtremes(v)
	if len(xs) == 0 {
		return nil
	}
	t0 := time.Now()
	err := t.dp.c.AllReduceF64(xs, comm.Max)
	t.dp.wait += time.Since(t0)
	if err != nil {
		return t.dp.wrap(s, "vitals", err)
	}
	stepvitals.UnpackExtremes(v, xs)
	return nil
}
