package stepvitals

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"

	"github.com/kestrel-lm/kestrel/internal/batchsched"
	"github.com/kestrel-lm/kestrel/internal/datasrc"
	"github.com/kestrel-lm/kestrel/internal/fileguard"
	"github.com/kestrel-lm/kestrel/internal/lossfit"
	"github.com/kestrel-lm/kestrel/internal/optim"
	"github.com/kestrel-lm/kestrel/internal/runlog"
)

// OnTrack fits the run's train_loss_raw against tokens_seen as it goes
// (internal/lossfit: L = E + A·(t/t0)^(−α), robust, on the stable phase)
// and records in each step line the fit, the residual of the recent steps
// against it and the projection to the planned end (runlog.OnTrack); the
// monitor's off_track rule judges the residual.
//
// Which steps the fit takes: none before max(2 × warm-up, 5% of the run,
// 10) (the warm-up and the fast fall after it are no power law), none in
// a re-warm-up nor for twice its length after it, none in a planned
// cooldown (WSD and WSD-S decays, multistep drops: the loss legitimately
// falls below the trend there). A cosine schedule decays from the end of
// its warm-up: the fit takes all of it. Every step after the start except
// the re-warm-ups is judged, cooldowns included (below the fit is good
// news, never an alert). A data stage switch (data.stages: another
// mixture, another curve) starts the fit over, neither fitting nor judging
// for max(warm-up, 5% of the run, 10) steps after it: the old mixture's fit
// would call a harder mixture off track (kestrel demo's cooldown mix sat
// 0.1 nats above it).
type OnTrack struct {
	tr      *lossfit.Tracker
	sched   *optim.Schedule
	cosine  bool
	start   int     // first step fitted and judged (1-based)
	rewarm  []int   // 0-based step indices at which re-warm-up cycles start (rewarm_at, then rewarm phases)
	settle  []int   // steps after each re-warm-up's start neither fitted nor judged (twice its ramp)
	planned []int64 // planned[i]: positions computed by steps 1..i (batch schedule × seq_len)

	mix         datasrc.MixWeigher // the data stages; nil = one mixture
	weights     []float64          // the mixture of the current stage
	stageStart  int                // first step fitted and judged after the last stage switch
	stageSettle int
}

// NewOnTrack is the fit of a run of the given steps, optimizer config,
// schedules and sequence length over data (its stages when it is a
// datasrc.MixWeigher).
func NewOnTrack(oc optim.Config, steps int, data datasrc.Source, sched *optim.Schedule, bs batchsched.Schedule, T int) *OnTrack {
	k := &OnTrack{tr: lossfit.NewTracker(lossfit.TrackerConfig{}), sched: sched, cosine: oc.Schedule == "cosine",
		start: max(2*oc.WarmupSteps(steps), steps/20, 10), stageSettle: max(oc.WarmupSteps(steps), steps/20, 10)}
	k.mix, _ = data.(datasrc.MixWeigher)
	for _, b := range oc.RewarmAt {
		if b < steps {
			k.rewarm, k.settle = append(k.rewarm, b), append(k.settle, 2*oc.RewarmSteps)
		}
	}
	for _, p := range oc.Phases { // [[optim.phases]] rewarms count cycles after rewarm_at's
		if p.Kind == "rewarm" {
			k.rewarm, k.settle = append(k.rewarm, p.Step-1), append(k.settle, 2*p.Steps)
		}
	}
	k.planned = make([]int64, steps+1)
	for i := 1; i <= steps; i++ {
		k.planned[i] = k.planned[i-1] + int64(bs.At(i-1)*T)
	}
	return k
}

// stage starts the fit over when step s (1-based) trains on another
// mixture than the step before. Steps are fed in order, live and on replay.
func (k *OnTrack) stage(s int) {
	if k.mix == nil {
		return
	}
	w := k.mix.MixWeights(s - 1)
	if k.weights != nil && !slices.Equal(w, k.weights) {
		k.tr = lossfit.NewTracker(lossfit.TrackerConfig{})
		k.stageStart = s + k.stageSettle
	}
	k.weights = w
}

// Phase says whether step s (1-based) is fitted and whether it is judged.
func (k *OnTrack) Phase(s int) (fit, judge bool) {
	if s < k.start || s < k.stageStart {
		return false, false
	}
	p := k.sched.At(s - 1)
	if p.Phase == "warmup" || p.Phase == "rewarm" {
		return false, false
	}
	if p.Cycle > 0 && p.Cycle <= len(k.rewarm) && s-1-k.rewarm[p.Cycle-1] < k.settle[p.Cycle-1] {
		return false, false
	}
	switch p.Phase {
	case "stable", "constant":
		return true, true
	case "decay":
		return k.cosine, true
	}
	return false, true // multistep drops
}

// Observe records step m's reading in m.OnTrack (nil before the first fit).
func (k *OnTrack) Observe(m *runlog.Step) {
	if k == nil { // a data-parallel rank other than 0 writes no metrics
		return
	}
	k.stage(m.Step)
	fit, judge := k.Phase(m.Step)
	xEnd := 0.0
	if m.Step < len(k.planned) && m.TokensComputed > 0 {
		ratio := float64(m.TokensSeen) / float64(m.TokensComputed) // the non-pad share so far
		xEnd = float64(m.TokensSeen) + float64(k.planned[len(k.planned)-1]-k.planned[m.Step])*ratio
	}
	r := k.tr.Add(float64(m.TokensSeen), m.TrainLossRaw, fit, judge, xEnd)
	if math.IsNaN(r.Fit) {
		return
	}
	m.OnTrack = &runlog.OnTrack{Fit: r.Fit, Residual: r.Residual, ResidualZ: r.Z, Projection: r.Projection, ProjectionSE: r.ProjectionSE}
}

// ReplayHistory rebuilds the on-track fit and the noise-scale EMAs of a
// resumed run from its metrics.jsonl (already truncated to the resumed
// step): the step lines are fed in order, so both continue exactly as in
// the uninterrupted run. A line that does not parse is skipped, as every
// reader of metrics.jsonl does; a missing file is no history. The file is
// streamed, line by line.
func ReplayHistory(path string, k *OnTrack, ns *NoiseScale) error {
	f, err := fileguard.Open(path) // a regular file only
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("train: the on-track fit's history: %w", err)
	}
	defer f.Close()
	rec := runlog.NewRecord()
	br := bufio.NewReaderSize(f, 1<<20)
	for {
		line, rerr := br.ReadBytes('\n')
		if rerr != nil && !errors.Is(rerr, io.EOF) {
			return fmt.Errorf("train: the on-track fit's history: %s: %w", path, rerr)
		}
		if len(line) == 0 && rerr != nil {
			return nil
		}
		if len(bytes.TrimSpace(line)) == 0 || runlog.ParseLine(bytes.TrimSpace(line), rec) != nil {
			continue
		}
		if _, ev := rec.Str("event"); ev {
			continue
		}
		step, ok1 := rec.Num("step")
		loss, ok2 := rec.Num("train_loss_raw")
		tok, ok3 := rec.Num("tokens_seen")
		if !ok1 || !ok2 || !ok3 {
			continue // an evaluation line
		}
		k.stage(int(step))
		fit, judge := k.Phase(int(step))
		k.tr.Add(tok, loss, fit, judge, 0)
		g2, ok4 := rec.Num("grad_true_sq_norm")
		tr, ok5 := rec.Num("grad_noise_trace")
		if ok4 && ok5 {
			ns.Restore(g2, tr)
		}
	}
}
