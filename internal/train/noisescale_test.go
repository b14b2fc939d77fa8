package train

import (
	"context"
	"encoding/json"
	"math"
	"path/filepath"
	"strings"
	"testing"
)

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
