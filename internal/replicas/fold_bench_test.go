package replicas

import (
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/kestrel-lm/kestrel/internal/kernels"
	"github.com/kestrel-lm/kestrel/internal/model"
	"github.com/kestrel-lm/kestrel/internal/optim"
)

// BenchmarkFoldShakespeare times Fold against the optimizer's step where
// the training loop runs them: right after a round of two 6×64
// micro-batches side by side at the shapes of configs/shakespeare-char.toml
// (885,888 parameters), the round untimed before each. "fold-ms" is Fold
// with the noise scale's norms (the loop's call with two micro-batches),
// "sum-ms" Fold without them, "adamw-ms" AdamW's Step (telemetry on) on
// the folded gradient; medians in ms:
//
//	go test -run '^$' -bench FoldShakespeare -benchtime 200x ./internal/replicas
func BenchmarkFoldShakespeare(b *testing.B) {
	defer kernels.SetThreads(kernels.Threads())
	kernels.SetThreads(runtime.GOMAXPROCS(0))
	c := shakespeareChar()
	m, err := model.New(c, 1)
	if err != nil {
		b.Fatal(err)
	}
	s, err := New(m, 2, 6, c.SeqLen)
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
	r := rand.New(rand.NewPCG(1, 2))
	passes := []Pass{{Batch: model.RandomBatch(c, 6, r), Scale: 0.5}, {Batch: model.RandomBatch(c, 6, r), Scale: 0.5}}
	sq := make([]float64, 2)
	fns := []func() error{
		func() error { s.Fold(sq); return nil },
		func() error { s.Fold(nil); return nil },
		func() error { _, err := o.Step(m.Params, m.Grads, 1, 1e-7); return err },
	}
	times := make([][]float64, len(fns))
	for b.Loop() {
		for i, fn := range fns {
			b.StopTimer()
			s.Begin()
			if _, _, err := s.Round(passes); err != nil {
				b.Fatal(err)
			}
			if i == 2 { // the optimizer reads a folded gradient; its fold untimed
				s.Fold(nil)
			}
			b.StartTimer()
			t0 := time.Now()
			if err := fn(); err != nil {
				b.Fatal(err)
			}
			times[i] = append(times[i], time.Since(t0).Seconds()*1e3)
		}
	}
	for i, name := range []string{"fold-ms", "sum-ms", "adamw-ms"} {
		slices.Sort(times[i])
		b.ReportMetric(times[i][len(times[i])/2], name)
	}
	b.ReportMetric(0, "ns/op")
}

// shakespeareChar is configs/shakespeare-char.toml's model.
func shakespeareChar() model.Config {
	return model.Config{Vocab: 256, DModel: 128, NLayers: 4, NHeads: 4, NKVHeads: 4, MLPHidden: 384,
		SeqLen: 64, RopeTheta: 10000, NormEps: 1e-5, InitStd: 0.02, Tied: true}
}
