package stepvitals

import (
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/runlog"
)

// TestNoiseScaleSyntheticKnownSigma feeds the estimator per-sequence
// gradients g_i = G + ε_i with |G|² = 4 and ε_i ~ N(0, σ²I) in d
// dimensions (tr Σ = dσ² = 10): B_simple must come out near 10/4 = 2.5
// sequences, for equal and for unequal micro-batches.
func TestNoiseScaleSyntheticKnownSigma(t *testing.T) {
	const d, sigma2 = 500, 0.02
	G := make([]float64, d)
	G[0], G[1] = math.Sqrt(2), math.Sqrt(2)
	want := d * sigma2 / 4
	for _, tc := range []struct {
		name  string
		micro []int // rows per micro-batch
	}{
		{"equal 4×2", []int{2, 2, 2, 2}},
		{"unequal 3+3+2", []int{3, 3, 2}},
		{"two halves of 16", []int{8, 8}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, 2))
			ns := NewNoiseScale()
			B := 0
			for _, r := range tc.micro {
				B += r
			}
			grads := make([]float32, d)
			var m runlog.Step
			for step := 0; step < 600; step++ {
				ns.Begin()
				clear(grads)
				full := make([]float64, d)
				for k, rows := range tc.micro {
					w := float64(rows) / float64(B)
					for r := 0; r < rows; r++ {
						for j := range grads {
							g := G[j] + math.Sqrt(sigma2)*rng.NormFloat64()
							grads[j] += float32(g / float64(B)) // w × the micro-batch mean
							full[j] += g / float64(B)
						}
					}
					ns.Micro(grads, k, rows, w, k == len(tc.micro)-1)
				}
				norm := 0.0
				for _, x := range full {
					norm += x * x
				}
				m = runlog.Step{}
				ns.Finish(math.Sqrt(norm), B, 64, false, &m)
			}
			if m.NoiseScale == nil {
				t.Fatal("no noise scale after 600 steps")
			}
			got := m.NoiseScale.BSimple
			if math.Abs(got-want) > 0.15*want {
				t.Errorf("B_simple %.3f sequences, want %.3f ± 15%% (|G|² est %.3f, tr Σ est %.3f)", got, want, m.NoiseScale.GradSq, m.NoiseScale.NoiseTrace)
			}
			if math.Abs(m.NoiseScale.BSimpleToks-64*got) > 1e-9*got {
				t.Errorf("tokens %.3f, want 64 × %.3f", m.NoiseScale.BSimpleToks, got)
			}
		})
	}
}

// One micro-batch per step, a non-finite gradient or a skipped update
// measures nothing: the metric is absent, never 0 or stale.
func TestNoiseScaleAbsentWhenNotMeasured(t *testing.T) {
	ns := NewNoiseScale()
	grads := []float32{1, 2, 3}
	var m runlog.Step
	ns.Begin()
	ns.Micro(grads, 0, 4, 1, true) // the whole batch in one pass
	ns.Finish(math.Sqrt(14), 4, 64, false, &m)
	if m.NoiseScale != nil {
		t.Errorf("one micro-batch: %+v, want absent", m.NoiseScale)
	}
	ns.Begin() // nothing measured (the loop measures only with two or more passes)
	ns.Finish(1, 4, 64, false, &m)
	if m.NoiseScale != nil {
		t.Errorf("no micro-batch measured: %+v, want absent", m.NoiseScale)
	}
	step := func(g1 []float32, skipped bool) *runlog.NoiseScale {
		var m runlog.Step
		ns.Begin()
		ns.Micro([]float32{1, 0, 0}, 0, 2, 0.5, false)
		ns.Micro(g1, 1, 2, 0.5, true)
		ns.Finish(1, 4, 64, skipped, &m)
		return m.NoiseScale
	}
	if r := step([]float32{1, 1, 0}, false); r == nil {
		t.Fatal("two micro-batches measured nothing")
	}
	if r := step([]float32{float32(math.NaN()), 1, 0}, false); r != nil {
		t.Errorf("NaN gradient: %+v, want absent", r)
	}
	if r := step([]float32{1, 1, 0}, true); r != nil {
		t.Errorf("skipped update: %+v, want absent", r)
	}
	var nilNS *NoiseScale // ranks other than 0
	nilNS.Begin()
	nilNS.Micro(grads, 0, 1, 1, false)
	nilNS.Finish(1, 4, 64, false, &m)
}

// A metrics.jsonl that cannot be read is an error naming it, not a fit
// silently restarted.
func TestReplayHistoryErrors(t *testing.T) {
	dir := t.TempDir()
	k, ns := &OnTrack{}, NewNoiseScale()
	if err := ReplayHistory(filepath.Join(dir, "missing.jsonl"), k, ns); err != nil {
		t.Errorf("missing file: %v, want no history", err)
	}
	p := filepath.Join(dir, "metrics.jsonl")
	if err := os.Mkdir(p, 0o755); err != nil {
		t.Fatal(err)
	}
	err := ReplayHistory(p, k, ns)
	if err == nil || !strings.Contains(err.Error(), "metrics.jsonl") {
		t.Errorf("a directory: %v, want an error naming the file", err)
	}
	var pe *os.PathError
	_ = errors.As(err, &pe)
}

// BenchmarkNoiseScaleMicro is the per-step cost of the noise scale with
// two micro-batches of a gradient of shakespeare-char's size (~0.9M
// parameters): a read and a copy after the first pass, one fused read of
// the gradient and the copy after the second, each on the kernels' pool
// (0.58 → 0.29 ms on 2 threads, docs/performance.md "Training loop").
func BenchmarkNoiseScaleMicro(b *testing.B) {
	grads := make([]float32, 800_000)
	for i := range grads {
		grads[i] = float32(i%97) * 1e-4
	}
	ns := NewNoiseScale()
	for b.Loop() {
		ns.Begin()
		ns.Micro(grads, 0, 6, 0.5, false)
		ns.Micro(grads, 1, 6, 0.5, true)
	}
}
