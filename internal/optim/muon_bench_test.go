package optim

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// layoutSpans lays out a Llama-style model (tied embeddings) as spans:
// vocab×d embedding, per layer two norms, q/k/v/o (d×d) and gate/up (f×d),
// down (d×f), and a final norm.
func layoutSpans(vocab, d, f, layers int) ([]Span, int) {
	var spans []Span
	off := 0
	add := func(name, kind string, shape ...int) {
		n := 1
		for _, s := range shape {
			n *= s
		}
		spans = append(spans, Span{Name: name, Offset: off, Size: n, Kind: kind, Shape: shape})
		off += n
	}
	add("embed", "embedding", vocab, d)
	for l := range layers {
		p := fmt.Sprintf("l%d.", l)
		add(p+"ln1", "norm", d)
		for _, m := range []string{"q", "k", "v", "o"} {
			add(p+m, "matrix", d, d)
		}
		add(p+"ln2", "norm", d)
		add(p+"gate", "matrix", f, d)
		add(p+"up", "matrix", f, d)
		add(p+"down", "matrix", d, f)
	}
	add("norm", "norm", d)
	return spans, off
}

// BenchmarkMuonVsAdamW times optimizer steps in alternating pairs (one
// AdamW step, one Muon step, on the same layout) and reports the median
// time of each and the median of the per-pair ratios muon/adamw, on the
// shakespeare-char layout (d 128, 4 layers, MLP 384) and a wider one
// (d 256, 4 layers, MLP 768). Alternation keeps the ratio fair on a
// shared, noisy machine.
func BenchmarkMuonVsAdamW(b *testing.B) {
	for _, lay := range []struct {
		name              string
		vocab, d, f, nLay int
	}{{"shakespeare", 256, 128, 384, 4}, {"d256", 4096, 256, 768, 4}} {
		b.Run(lay.name, func(b *testing.B) {
			spans, n := layoutSpans(lay.vocab, lay.d, lay.f, lay.nLay)
			var opts [2]*AdamW
			var ps [2][]float32
			for i, name := range []string{"adamw", "muon"} {
				cfg := DefaultConfig()
				cfg.Name = name
				o, err := NewAdamW(cfg, n, spans)
				if err != nil {
					b.Fatal(err)
				}
				opts[i], ps[i] = o, seeded(n, 1, 0.02)
			}
			g := seeded(n, 2, 1)
			var ta, tm, ratio []float64
			for range b.N {
				var d [2]float64
				for i := range opts {
					t0 := time.Now()
					if _, err := opts[i].Step(ps[i], g, 1, 1e-4); err != nil {
						b.Fatal(err)
					}
					d[i] = time.Since(t0).Seconds()
				}
				ta, tm, ratio = append(ta, d[0]), append(tm, d[1]), append(ratio, d[1]/d[0])
			}
			b.ReportMetric(median(ta)*1e3, "adamw-ms")
			b.ReportMetric(median(tm)*1e3, "muon-ms")
			b.ReportMetric(median(ratio), "muon/adamw")
		})
	}
}

func median(x []float64) float64 {
	s := slices.Clone(x)
	slices.Sort(s)
	return s[len(s)/2]
}

// BenchmarkAdamVariants times optimizer steps of AdamW, NAdamW and AdamC
// in alternating triples on the same layouts and reports the median time
// of each and the medians of the per-triple ratios to AdamW: NAdamW runs
// Go loops where AdamW runs AVX-512 kernels, AdamC runs AdamW's kernels.
func BenchmarkAdamVariants(b *testing.B) {
	for _, lay := range []struct {
		name              string
		vocab, d, f, nLay int
	}{{"shakespeare", 256, 128, 384, 4}, {"d256", 4096, 256, 768, 4}, {"d512", 8192, 512, 1536, 4}} {
		b.Run(lay.name, func(b *testing.B) {
			spans, n := layoutSpans(lay.vocab, lay.d, lay.f, lay.nLay)
			names := []string{"adamw", "nadamw", "adamc"}
			opts := make([]*AdamW, len(names))
			ps := make([][]float32, len(names))
			for i, name := range names {
				cfg := DefaultConfig()
				cfg.Name = name
				o, err := NewAdamW(cfg, n, spans)
				if err != nil {
					b.Fatal(err)
				}
				opts[i], ps[i] = o, seeded(n, 1, 0.02)
			}
			g := seeded(n, 2, 1)
			ts := make([][]float64, len(names))
			ratios := make([][]float64, len(names))
			for range b.N {
				d := make([]float64, len(names))
				for i := range opts {
					t0 := time.Now()
					if _, err := opts[i].Step(ps[i], g, 1, 1e-4); err != nil {
						b.Fatal(err)
					}
					d[i] = time.Since(t0).Seconds()
					ts[i] = append(ts[i], d[i])
					ratios[i] = append(ratios[i], d[i]/d[0])
				}
			}
			for i, name := range names {
				b.ReportMetric(median(ts[i])*1e3, name+"-ms")
				if i > 0 {
					b.ReportMetric(median(ratios[i]), name+"/adamw")
				}
			}
		})
	}
}
