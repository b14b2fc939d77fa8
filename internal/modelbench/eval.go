package modelbench

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/kestrel-lm/kestrel/internal/kernels"
	"github.com/kestrel-lm/kestrel/internal/model"
	"github.com/kestrel-lm/kestrel/internal/optim"
)

// EvalOptions configure Eval.
type EvalOptions struct {
	Model  model.Config
	Batch  int // sequences per pass, ≥ 1
	Pairs  int // timed rounds, ≥ 1 (medians count)
	Warmup int // untimed rounds first (arena and scratch allocation)
}

// EvalResult is what Eval measured. Every round times one training step
// (StartAccumulation, ForwardBackward, AdamW: BenchStep's step), one Forward (the
// evaluation path before LogProbs: full activations, logits at every
// position) and one LogProbs on the same random batch, one after the other.
type EvalResult struct {
	ForwardOnlyTPS float64 // LogProbs tokens/s (median round)
	ForwardTPS     float64 // Forward tokens/s
	TrainTPS       float64 // training-step tokens/s
	// Ratio is the median over rounds of the per-round ratio
	// LogProbs tokens/s ÷ training tokens/s; RatioForward the same against
	// Forward.
	Ratio, RatioForward float64
	MaxAbsDiff          float64 // max |LogProbs − (logits − lse)| of the first round
	// LossRelDiff is |mean −LogProbs − Forward's loss| ÷ Forward's loss, of
	// the first round (Forward's log-sum-exp runs the scalar exponential,
	// LogProbs the training head's vectorised one).
	LossRelDiff       float64
	Batch, Seq, Pairs int
	PeakRSSMB         float64
	// Model is the model measured (its shape is printed beside the rates).
	Model *model.Model
}

// Eval measures the forward-only path against a training step and against
// Forward on a freshly initialised model (seed 1) and random tokens, in
// alternating rounds (see EvalResult).
func Eval(ctx context.Context, opt EvalOptions) (EvalResult, error) {
	if opt.Batch < 1 || opt.Pairs < 1 || opt.Warmup < 0 {
		return EvalResult{}, fmt.Errorf("bench eval: need --batch >= 1, --pairs >= 1, --warmup >= 0 (got %d, %d, %d)", opt.Batch, opt.Pairs, opt.Warmup)
	}
	m, err := model.New(opt.Model, 1)
	if err != nil {
		return EvalResult{}, fmt.Errorf("bench eval: %w", err)
	}
	var spans []optim.Span
	for _, t := range m.Tensors() {
		spans = append(spans, optim.Span{Name: t.Name, Offset: t.Offset, Size: t.Size, Kind: t.Kind})
	}
	adam, err := optim.NewAdamW(optim.DefaultConfig(), len(m.Params), spans)
	if err != nil {
		return EvalResult{}, fmt.Errorf("bench eval: optimizer: %w", err)
	}
	c := opt.Model
	T, N := c.SeqLen, opt.Batch*c.SeqLen
	r := rand.New(rand.NewPCG(1, 2))
	b := model.RandomBatch(c, opt.Batch, r)
	lp := make([]float32, N)
	res := EvalResult{Batch: opt.Batch, Seq: T, Pairs: opt.Pairs, Model: m}
	var fo, fw, tr, ratio, ratioF []float64
	for round := 0; round < opt.Warmup+opt.Pairs; round++ {
		if err := ctx.Err(); err != nil {
			return EvalResult{}, err
		}
		t0 := time.Now()
		m.StartAccumulation()
		st, err := m.ForwardBackward(b, 1)
		if err != nil {
			return EvalResult{}, fmt.Errorf("bench eval: %w", err)
		}
		if _, err := adam.Step(m.Params, m.Grads, st.Loss, 1e-3); err != nil {
			return EvalResult{}, fmt.Errorf("bench eval: optimizer: %w", err)
		}
		t1 := time.Now()
		fst, err := m.Forward(b)
		if err != nil {
			return EvalResult{}, fmt.Errorf("bench eval: %w", err)
		}
		t2 := time.Now()
		if err := m.LogProbs(b, lp); err != nil {
			return EvalResult{}, fmt.Errorf("bench eval: %w", err)
		}
		t3 := time.Now()
		if round == 0 {
			loss, _ := model.LossFromLogProbs(lp, b.Targets)
			res.LossRelDiff = math.Abs(loss-fst.Loss) / fst.Loss
			z, lse := m.Outputs()
			for i, y := range b.Targets {
				res.MaxAbsDiff = max(res.MaxAbsDiff, float64(abs32(lp[i]-(z[i*c.Vocab+int(y)]-lse[i]))))
			}
		}
		if round < opt.Warmup {
			continue
		}
		tps := func(d time.Duration) float64 { return float64(N) / d.Seconds() }
		a, f, o := tps(t1.Sub(t0)), tps(t2.Sub(t1)), tps(t3.Sub(t2))
		tr, fw, fo = append(tr, a), append(fw, f), append(fo, o)
		ratio, ratioF = append(ratio, o/a), append(ratioF, o/f)
	}
	res.ForwardOnlyTPS, res.ForwardTPS, res.TrainTPS = median(fo), median(fw), median(tr)
	res.Ratio, res.RatioForward = median(ratio), median(ratioF)
	res.PeakRSSMB = kernels.PeakRSSMB()
	return res, nil
}

func abs32(x float32) float32 {
	if x < 0 {
		return -x
	}
	return x
}
