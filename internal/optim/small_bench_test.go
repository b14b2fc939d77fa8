package optim_test

import (
	"testing"

	"github.com/kestrel-lm/kestrel/internal/model"
	"github.com/kestrel-lm/kestrel/internal/optim"
)

// BenchmarkAdamWStepShakespeare times one step (telemetry on, as in
// training) on the parameter layout of configs/shakespeare-char.toml
// (885,888 parameters in 38 tensors, most not aligned to the optimizer's
// chunks): the small-model case of issue 39.
//
//	go test -run '^$' -bench AdamWStepShakespeare -cpu 1,2 -benchtime 200x ./internal/optim
func BenchmarkAdamWStepShakespeare(b *testing.B) {
	cfg := model.Config{Vocab: 256, DModel: 128, NLayers: 4, NHeads: 4, NKVHeads: 4, MLPHidden: 384,
		SeqLen: 64, RopeTheta: 10000, NormEps: 1e-5, InitStd: 0.02, Tied: true}
	m, err := model.New(cfg, 1)
	if err != nil {
		b.Fatal(err)
	}
	var spans []optim.Span
	for _, t := range m.Tensors() {
		spans = append(spans, optim.Span{Name: t.Name, Offset: t.Offset, Size: t.Size, Kind: t.Kind})
	}
	o, err := optim.NewAdamW(optim.DefaultConfig(), len(m.Params), spans)
	if err != nil {
		b.Fatal(err)
	}
	g := make([]float32, len(m.Params))
	for i := range g {
		g[i] = float32(i%7-3) * 1e-3
	}
	b.SetBytes(4 * int64(len(g)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := o.Step(m.Params, g, 1, 1e-4); err != nil {
			b.Fatal(err)
		}
	}
}
