package optim

import (
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/kestrel-lm/kestrel/internal/kernels"
	"github.com/kestrel-lm/kestrel/internal/model"
)

// BenchmarkOptimizerSpanShakespeare times the training loop's optimizer
// span on configs/shakespeare-char.toml (AdamW with gradient and update
// clipping, skip-step and telemetry, the EMA at β 0.995) where it runs: right
// after a forward and backward pass of one 6×64 micro-batch, which leave
// the optimizer's buffers out of the caches. Each round runs the span
// three ways in turn, the model's pass untimed before each: "bench" is
// Step alone (the `optimizer` row of kestrel bench step), "separate" Step
// and then the EMA's own pass, "folded" StepEMA (the EMA in the θ pass).
// It reports the median of each in ms (noise on a shared machine moves
// all three alike):
//
//	go test -run '^$' -bench OptimizerSpanShakespeare -cpu 1,2 -benchtime 100x ./internal/optim
func BenchmarkOptimizerSpanShakespeare(b *testing.B) {
	defer kernels.SetThreads(kernels.Threads())
	kernels.SetThreads(runtime.GOMAXPROCS(0))
	m, o := shakespeareModel(b)
	ema := NewEMA(0.995, m.Params)
	batch := model.RandomBatch(m.Cfg, 6, rand.New(rand.NewPCG(1, 2)))
	spanFns := []func() error{
		func() error { _, err := o.Step(m.Params, m.Grads, 1, 1e-3); return err },
		func() error {
			_, err := o.Step(m.Params, m.Grads, 1, 1e-3)
			ema.Update(m.Params)
			return err
		},
		func() error { _, err := o.StepEMA(m.Params, m.Grads, 1, 1e-3, ema); return err },
	}
	times := make([][]float64, len(spanFns))
	for b.Loop() {
		for i, fn := range spanFns {
			b.StopTimer()
			m.ZeroGrads()
			if _, err := m.ForwardBackward(batch, 1); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			t0 := time.Now()
			if err := fn(); err != nil {
				b.Fatal(err)
			}
			times[i] = append(times[i], time.Since(t0).Seconds()*1e3)
		}
	}
	for i, name := range []string{"bench-ms", "separate-ms", "folded-ms"} {
		slices.Sort(times[i])
		b.ReportMetric(times[i][len(times[i])/2], name)
	}
	b.ReportMetric(0, "ns/op")
}
