package optim

import "testing"

// BenchmarkAdamWStep times one full step (grad norm, both passes, update
// clipping) on 1M parameters in four tensors.
func BenchmarkAdamWStep(b *testing.B) {
	const n = 1 << 20
	spans := []Span{{"a", 0, n / 4, "matrix", nil}, {"b", n / 4, n / 4, "matrix", nil}, {"c", n / 2, n / 4, "embedding", nil}, {"d", 3 * n / 4, n / 4, "norm", nil}}
	o, err := NewAdamW(DefaultConfig(), n, spans)
	if err != nil {
		b.Fatal(err)
	}
	p, g := make([]float32, n), make([]float32, n)
	for i := range p {
		p[i], g[i] = float32(i%13)*0.01, float32(i%7-3)*0.001
	}
	b.SetBytes(4 * n)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := o.Step(p, g, 1, 1e-4); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAdamWStepRef7m times one step (telemetry on, as in training) on
// the parameter layout of the ref7m model of kestrel bench step: 7.6M
// parameters, untied embedding and head.
//
//	go test -run '^$' -bench AdamWStepRef7m -cpu 1 -benchtime 20x ./internal/optim
func BenchmarkAdamWStepRef7m(b *testing.B) {
	spans, n := layoutSpans(8192, 256, 768, 4)
	spans = append(spans, Span{Name: "lm_head", Offset: n, Size: 8192 * 256, Kind: "matrix", Shape: []int{8192, 256}})
	n += 8192 * 256
	o, err := NewAdamW(DefaultConfig(), n, spans)
	if err != nil {
		b.Fatal(err)
	}
	p, g := seeded(n, 1, 0.02), seeded(n, 2, 1e-3)
	b.SetBytes(4 * int64(n))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := o.Step(p, g, 1, 1e-4); err != nil {
			b.Fatal(err)
		}
	}
}
