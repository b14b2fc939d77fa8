package optim_test

import (
	"sort"
	"testing"
	"time"

	"github.com/kestrel-lm/kestrel/internal/model"
	"github.com/kestrel-lm/kestrel/internal/optim"
)

// BenchmarkTelemetryOverheadRef7m measures what the per-span telemetry
// (update, param and moment sums of squares) costs on the reference 7.6M
// model of kestrel bench step (batch 8): optimizer steps with telemetry
// on and off alternate in pairs (so load from other processes hits both
// alike), and the difference of the medians is related to the median full
// step (forward + backward + optimizer) timed in the same run.
//
//	go test -run '^$' -bench TelemetryOverhead -benchtime 40x ./internal/optim
func BenchmarkTelemetryOverheadRef7m(b *testing.B) {
	cfg := model.Config{Vocab: 8192, DModel: 256, NLayers: 4, NHeads: 4, NKVHeads: 4, MLPHidden: 768,
		SeqLen: 256, RopeTheta: 10000, NormEps: 1e-5, InitStd: 0.02}
	m, err := model.New(cfg, 1)
	if err != nil {
		b.Fatal(err)
	}
	var spans []optim.Span
	for _, t := range m.Tensors() {
		spans = append(spans, optim.Span{Name: t.Name, Offset: t.Offset, Size: t.Size, Kind: t.Kind})
	}
	const batch = 8
	bt := &model.Batch{B: batch, T: cfg.SeqLen, Inputs: make([]int32, batch*cfg.SeqLen), Targets: make([]int32, batch*cfg.SeqLen)}
	for i := range bt.Inputs {
		bt.Inputs[i], bt.Targets[i] = int32(i*7919%cfg.Vocab), int32(i*104729%cfg.Vocab)
	}
	mk := func(on bool) *optim.AdamW {
		o, err := optim.NewAdamW(optim.DefaultConfig(), len(m.Params), spans)
		if err != nil {
			b.Fatal(err)
		}
		optim.SetTelemetry(o, on)
		return o
	}
	on, off := mk(true), mk(false)
	// Separate parameter copies: both optimizers see the same gradients.
	pOn, pOff := append([]float32(nil), m.Params...), append([]float32(nil), m.Params...)
	var steps, tOn, tOff []float64
	fb := func() float64 {
		m.ZeroGrads()
		st, err := m.ForwardBackward(bt, 1)
		if err != nil {
			b.Fatal(err)
		}
		return st.Loss
	}
	timeOpt := func(o *optim.AdamW, p []float32, loss float64) float64 {
		t0 := time.Now()
		if _, err := o.Step(p, m.Grads, loss, 1e-4); err != nil {
			b.Fatal(err)
		}
		return time.Since(t0).Seconds()
	}
	loss := fb()
	timeOpt(on, pOn, loss) // warm-up: scratch buffers, page faults
	timeOpt(off, pOff, loss)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i%8 == 0 { // a full step now and then (forward + backward + optimizer)
			t0 := time.Now()
			loss = fb()
			timeOpt(on, pOn, loss)
			steps = append(steps, time.Since(t0).Seconds())
		}
		if i%2 == 0 { // alternate which goes first
			tOn = append(tOn, timeOpt(on, pOn, loss))
			tOff = append(tOff, timeOpt(off, pOff, loss))
		} else {
			tOff = append(tOff, timeOpt(off, pOff, loss))
			tOn = append(tOn, timeOpt(on, pOn, loss))
		}
	}
	b.StopTimer()
	med := func(x []float64) float64 {
		x = append([]float64(nil), x...)
		sort.Float64s(x)
		return x[len(x)/2]
	}
	// The median of the per-pair differences is robust to a pair that
	// other processes slowed down.
	diff := make([]float64, len(tOn))
	for i := range tOn {
		diff[i] = tOn[i] - tOff[i]
	}
	b.ReportMetric(med(tOn)*1e3, "opt_on_ms")
	b.ReportMetric(med(tOff)*1e3, "opt_off_ms")
	b.ReportMetric(med(steps)*1e3, "step_ms")
	b.ReportMetric(100*med(diff)/med(steps), "overhead_%_of_step")
	b.ReportMetric(100*med(diff)/med(tOff), "overhead_%_of_opt")
}
