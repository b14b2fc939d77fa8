package optim

import (
	"runtime"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/kernels"
	"github.com/kestrel-lm/kestrel/internal/model"
)

// shakespeareModel is the model of configs/shakespeare-char.toml (seed 1)
// and an optimizer (default config, telemetry on) on its parameter layout
// (885,888 parameters in 38 tensors).
func shakespeareModel(tb testing.TB) (*model.Model, *AdamW) {
	cfg := model.Config{Vocab: 256, DModel: 128, NLayers: 4, NHeads: 4, NKVHeads: 4, MLPHidden: 384,
		SeqLen: 64, RopeTheta: 10000, NormEps: 1e-5, InitStd: 0.02, Tied: true}
	m, err := model.New(cfg, 1)
	if err != nil {
		tb.Fatal(err)
	}
	var spans []Span
	for _, t := range m.Tensors() {
		spans = append(spans, Span{Name: t.Name, Offset: t.Offset, Size: t.Size, Kind: t.Kind})
	}
	o, err := NewAdamW(DefaultConfig(), len(m.Params), spans)
	if err != nil {
		tb.Fatal(err)
	}
	return m, o
}

// shakespeareOptim is shakespeareModel's optimizer with the parameters and
// a gradient, one step taken.
func shakespeareOptim(tb testing.TB) (*AdamW, []float32, []float32) {
	m, o := shakespeareModel(tb)
	g := seeded(len(m.Params), 5, 1e-3)
	if _, err := o.Step(m.Params, g, 1, 1e-4); err != nil {
		tb.Fatal(err)
	}
	return o, m.Params, g
}

// BenchmarkAdamWPasses times each pass of a step on the shakespeare-char
// layout, on as many pool threads as -cpu gives (issue 39):
//
//	go test -run '^$' -bench AdamWPasses -cpu 1,2 -benchtime 300x ./internal/optim
func BenchmarkAdamWPasses(b *testing.B) {
	defer kernels.SetThreads(kernels.Threads())
	kernels.SetThreads(runtime.GOMAXPROCS(0))
	o, p, g := shakespeareOptim(b)
	k := adamConsts{gs: 1, b1: 0.9, c1: 0.1, b2: 0.95, c2: 0.05, ib1: 1.5, ib2: 1.2, eps: 1e-8, step: 1e-9}
	ema := NewEMA(0.995, p)
	for _, x := range []struct {
		name string
		fn   func()
	}{
		{"gradnorm", func() { o.gradNormPass(g) }},
		{"dir", func() { o.dirPass(p, g, &k, 1, false) }},
		{"dir-store", func() { o.dirPass(p, g, &k, 1, o.storing(len(p))) }},
		{"theta", func() { o.commitStore(p, 1e-9, nil) }},
		{"theta-ema", func() { o.commitStore(p, 1e-9, ema) }},
		{"commit", func() { o.commitPass(p, g, &k, 1) }},
		{"ema", func() { ema.Update(p) }},
		{"step", func() {
			if _, err := o.Step(p, g, 1, 1e-9); err != nil {
				b.Fatal(err)
			}
		}},
	} {
		b.Run(x.name, func(b *testing.B) {
			b.SetBytes(4 * int64(len(p)))
			for b.Loop() {
				x.fn()
			}
		})
	}
}
