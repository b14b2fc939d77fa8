package train

import (
	"context"
	"encoding/json"
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
			ns := newNoiseScale()
			B := sumInts(tc.micro)
			grads := make([]float32, d)
			var m runlog.Step
			for step := 0; step < 600; step++ {
				ns.begin()
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
					ns.micro(grads, k, rows, w, k == len(tc.micro)-1)
				}
				norm := 0.0
				for _, x := range full {
					norm += x * x
				}
				m = runlog.Step{}
				ns.finish(math.Sqrt(norm), B, 64, false, &m)
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
	ns := newNoiseScale()
	grads := []float32{1, 2, 3}
	var m runlog.Step
	ns.begin()
	ns.micro(grads, 0, 4, 1, true) // the whole batch in one pass
	ns.finish(math.Sqrt(14), 4, 64, false, &m)
	if m.NoiseScale != nil {
		t.Errorf("one micro-batch: %+v, want absent", m.NoiseScale)
	}
	ns.begin() // nothing measured (the loop measures only with two or more passes)
	ns.finish(1, 4, 64, false, &m)
	if m.NoiseScale != nil {
		t.Errorf("no micro-batch measured: %+v, want absent", m.NoiseScale)
	}
	step := func(g1 []float32, skipped bool) *runlog.NoiseScale {
		var m runlog.Step
		ns.begin()
		ns.micro([]float32{1, 0, 0}, 0, 2, 0.5, false)
		ns.micro(g1, 1, 2, 0.5, true)
		ns.finish(1, 4, 64, skipped, &m)
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
	var nilNS *noiseScale // ranks other than 0
	nilNS.begin()
	nilNS.micro(grads, 0, 1, 1, false)
	nilNS.finish(1, 4, 64, false, &m)
}

// stepValues returns the named values of every step line of a run.
func stepValues(t *testing.T, dir string, names ...string) []map[string]float64 {
	t.Helper()
	var out []map[string]float64
	for _, m := range readLines(t, dir) {
		v := map[string]float64{}
		for _, n := range names {
			if raw, ok := m[n]; ok {
				var x float64
				if err := json.Unmarshal(raw, &x); err != nil {
					t.Fatalf("%s = %s: %v", n, raw, err)
				}
				v[n] = x
			}
		}
		out = append(out, v)
	}
	return out
}

var fitNames = []string{"grad_noise_scale", "grad_noise_scale_tokens", "grad_true_sq_norm", "grad_noise_trace",
	"loss_fit", "loss_projection_final", "loss_projection_se", "scaling_law_residual", "scaling_law_residual_z"}

// A short run with gradient accumulation records a finite, positive
// noise scale and, after the fit's start, the fit and its projection;
// without accumulation the noise scale is absent. A crash and resume
// continues both exactly (they are rebuilt from metrics.jsonl).
func TestNoiseScaleAndFitInARun(t *testing.T) {
	opts := func(dir string, micro int) Options {
		o := baseOpts(dir)
		o.Train.Steps, o.Train.EvalEvery, o.Train.MicroBatch = 40, 20, micro
		o.Checkpoint.Every = 8
		return o
	}
	ref := filepath.Join(t.TempDir(), "ref")
	if _, err := Run(context.Background(), opts(ref, 2)); err != nil {
		t.Fatal(err)
	}
	want := stepValues(t, ref, fitNames...)
	if len(want) != 40 {
		t.Fatalf("%d step lines", len(want))
	}
	noisy, fitted := 0, 0
	for i, v := range want {
		if x, ok := v["grad_noise_scale"]; ok {
			if !(x > 0) || math.IsInf(x, 0) {
				t.Errorf("step %d: grad_noise_scale %g, want finite > 0", i+1, x)
			}
			noisy++
		}
		if _, ok := v["loss_fit"]; ok {
			if i+1 < 10 {
				t.Errorf("step %d: loss_fit before the fit's start (step 10)", i+1)
			}
			fitted++
		}
	}
	if noisy < 20 || fitted < 10 {
		t.Errorf("%d of 40 steps with grad_noise_scale, %d with loss_fit; want ≥ 20 and ≥ 10", noisy, fitted)
	}
	if _, ok := want[39]["loss_projection_final"]; !ok {
		t.Error("the last step has no loss_projection_final")
	}

	one := filepath.Join(t.TempDir(), "one")
	if _, err := Run(context.Background(), opts(one, 0)); err != nil {
		t.Fatal(err)
	}
	for i, v := range stepValues(t, one, "grad_noise_scale", "grad_true_sq_norm") {
		if len(v) > 0 {
			t.Fatalf("step %d with one micro-batch records %v, want absent", i+1, v)
		}
	}

	dir := filepath.Join(t.TempDir(), "run")
	o := opts(dir, 2)
	o.Observers = []Observer{stopAt{step: 30}} // crash between the checkpoints at 24 and 32
	if _, err := Run(context.Background(), o); err == nil || !strings.Contains(err.Error(), "simulated crash") {
		t.Fatalf("want crash, got %v", err)
	}
	if _, err := Run(context.Background(), opts(dir, 2)); err != nil {
		t.Fatal(err)
	}
	got := stepValues(t, dir, fitNames...)
	for i := range want {
		for _, n := range fitNames {
			if a, b := got[i][n], want[i][n]; a != b && !(math.IsNaN(a) && math.IsNaN(b)) {
				t.Errorf("step %d %s: resumed %v, uninterrupted %v", i+1, n, a, b)
			}
		}
	}
}

// A metrics.jsonl that cannot be read is an error naming it, not a fit
// silently restarted.
func TestReplayHistoryErrors(t *testing.T) {
	dir := t.TempDir()
	k, ns := &onTrack{}, newNoiseScale()
	if err := replayHistory(filepath.Join(dir, "missing.jsonl"), k, ns); err != nil {
		t.Errorf("missing file: %v, want no history", err)
	}
	p := filepath.Join(dir, "metrics.jsonl")
	if err := os.Mkdir(p, 0o755); err != nil {
		t.Fatal(err)
	}
	err := replayHistory(p, k, ns)
	if err == nil || !strings.Contains(err.Error(), "metrics.jsonl") {
		t.Errorf("a directory: %v, want an error naming the file", err)
	}
	var pe *os.PathError
	_ = errors.As(err, &pe)
}

// BenchmarkNoiseScaleMicro is the per-step cost of the noise scale with
// two micro-batches of a gradient of shakespeare-char's size (~0.9M
// parameters): a read and a copy after the first pass, one fused read of
// the gradient and the copy after the second.
func BenchmarkNoiseScaleMicro(b *testing.B) {
	grads := make([]float32, 800_000)
	for i := range grads {
		grads[i] = float32(i%97) * 1e-4
	}
	ns := newNoiseScale()
	for b.Loop() {
		ns.begin()
		ns.micro(grads, 0, 6, 0.5, false)
		ns.micro(grads, 1, 6, 0.5, true)
	}
}
