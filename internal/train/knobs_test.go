package train

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/optim"
)

func ptr[T any](v T) *T { return &v }

// knobOpts is baseOpts with a knob schedule: max_grad_norm 1.0 → 1e-3 at
// step 6 (every later gradient is clipped), then at step 9 an LR scale
// of 0.5, a tighter skip σ and QK-Clip with a τ every head exceeds.
func knobOpts(dir string) Options {
	o := baseOpts(dir)
	o.Optim.Knobs = []optim.KnobStep{
		{Step: 6, MaxGradNorm: ptr(1e-3)},
		{Step: 9, LRScale: ptr(0.5), SkipSigma: ptr(50.0), QKClipTau: ptr(1e-3)},
	}
	return o
}

func field[T any](t *testing.T, m map[string]json.RawMessage, k string) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(m[k], &v); err != nil {
		t.Fatalf("step line: %s: %v (%s)", k, err, m[k])
	}
	return v
}

// TestKnobSchedule: steps before the first entry are those of a run
// without a schedule; from step 6 on the gradient is clipped to the new
// max_grad_norm; the knobs in force are per-step metrics; QK-Clip turned on
// by the schedule alone clips from its step on; a crash before the entry
// resumes bit-exactly across it.
func TestKnobSchedule(t *testing.T) {
	ref := filepath.Join(t.TempDir(), "ref")
	if _, err := Run(context.Background(), baseOpts(ref)); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "knobs")
	if _, err := Run(context.Background(), knobOpts(dir)); err != nil {
		t.Fatal(err)
	}
	refL, got := readLines(t, ref), readLines(t, dir)
	if len(refL) != 12 || len(got) != 12 {
		t.Fatalf("%d and %d step lines", len(refL), len(got))
	}
	differs := false
	for i := range got {
		s, a, b := i+1, refL[i], got[i]
		for _, k := range []string{"train_loss_raw", "grad_global_norm", "update_norm", "grad_clipped", "learning_rate"} {
			same := string(a[k]) == string(b[k])
			if s < 6 && !same {
				t.Errorf("step %d: %s %s, want %s as without a schedule", s, k, b[k], a[k])
			}
			differs = differs || (s >= 6 && !same)
		}
		wantMGN, wantScale, wantSkip, wantTau := 1.0, 1.0, 6.0, 0.0
		if s >= 6 {
			wantMGN = 1e-3
			if !field[bool](t, b, "grad_clipped") {
				t.Errorf("step %d: grad_clipped false with max_grad_norm 1e-3 (grad norm %s)", s, b["grad_global_norm"])
			}
		}
		if s >= 9 {
			wantScale, wantSkip, wantTau = 0.5, 50, 1e-3
			if _, ok := b["qk_clipped_heads"]; !ok {
				t.Errorf("step %d: no qk_clipped_heads with qk_clip_tau in force", s)
			}
		} else if _, ok := b["qk_clipped_heads"]; ok {
			t.Errorf("step %d: qk_clipped_heads before QK-Clip's step", s)
		}
		for k, want := range map[string]float64{"max_grad_norm": wantMGN, "lr_scale": wantScale, "skip_sigma": wantSkip, "qk_clip_tau": wantTau, "update_clip_sigma": 2, "z_loss_weight": 0} {
			if v := field[float64](t, b, k); v != want {
				t.Errorf("step %d: %s = %g, want %g", s, k, v, want)
			}
			if v := field[float64](t, a, k); k == "max_grad_norm" && v != 1 {
				t.Errorf("step %d without a schedule: max_grad_norm = %g, want 1", s, v)
			}
		}
	}
	if !differs {
		t.Error("the schedule changed nothing from step 6 on")
	}
	if a, b := field[float64](t, got[8], "learning_rate"), field[float64](t, got[7], "learning_rate"); !(a < b) {
		t.Errorf("lr_scale 0.5 at step 9: learning_rate %g after %g", a, b)
	}

	// Crash at step 7 (checkpoints at 4 and 8): the resume from step 4
	// crosses the entry at step 6.
	crash := filepath.Join(t.TempDir(), "crash")
	o := knobOpts(crash)
	o.Observers = []Observer{stopAt{step: 7}}
	if _, err := Run(context.Background(), o); err == nil || !strings.Contains(err.Error(), "simulated crash") {
		t.Fatalf("want crash, got %v", err)
	}
	if _, err := Run(context.Background(), knobOpts(crash)); err != nil {
		t.Fatal(err)
	}
	if w, g := lossSeq(t, dir), lossSeq(t, crash); !slices.Equal(w, g) {
		t.Errorf("losses differ after a resume across the schedule:\n got %v\nwant %v", g, w)
	}
	a, b := filepath.Join(dir, "checkpoints", CheckpointName(12)), filepath.Join(crash, "checkpoints", CheckpointName(12))
	for _, f := range []string{ModelFile, OptimizerFile, EMAFile} {
		if fileSum(t, a, f) != fileSum(t, b, f) {
			t.Errorf("%s differs between the uninterrupted and the resumed run", f)
		}
	}
}
