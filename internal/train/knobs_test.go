package train

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/checkpoint"
	"github.com/kestrel-lm/kestrel/internal/optim"
)

func ptr[T any](v T) *T { return &v }

// noClipOpts is baseOpts with max_grad_norm 10, above every gradient norm
// of the run (about 1.5), so no gradient is clipped.
func noClipOpts(dir string) Options {
	o := baseOpts(dir)
	o.Optim.MaxGradNorm = 10
	return o
}

// knobOpts is noClipOpts with a knob schedule: max_grad_norm 10 → 1 at
// step 6 (every later gradient is clipped), then at step 9 an LR scale of
// 0.5, another skip σ and QK-Clip with a τ no head reaches, at step 11 one
// every head exceeds.
func knobOpts(dir string) Options {
	o := noClipOpts(dir)
	o.Optim.Knobs = []optim.KnobStep{
		{Step: 6, MaxGradNorm: ptr(1.0)},
		{Step: 9, LRScale: ptr(0.5), SkipSigma: ptr(50.0), QKClipTau: ptr(1e9)},
		{Step: 11, QKClipTau: ptr(1e-3)},
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
	if _, err := Run(context.Background(), noClipOpts(ref)); err != nil {
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
			differs = differs || (s >= 6 && s < 9 && !same)
		}
		if c := field[bool](t, a, "grad_clipped"); c {
			t.Fatalf("step %d: a gradient clipped at max_grad_norm 10 (norm %s): the test needs none", s, a["grad_global_norm"])
		}
		wantMGN, wantScale, wantSkip, wantTau, wantHeads := 10.0, 1.0, 6.0, 0.0, -1
		if s >= 6 {
			wantMGN = 1
			if !field[bool](t, b, "grad_clipped") {
				t.Errorf("step %d: grad_clipped false with max_grad_norm 1 (grad norm %s)", s, b["grad_global_norm"])
			}
		}
		if s >= 9 {
			wantScale, wantSkip, wantTau, wantHeads = 0.5, 50, 1e9, 0
		}
		if s >= 11 {
			wantTau, wantHeads = 1e-3, 2 // 1 layer × 2 heads
		}
		if n, ok := b["qk_clipped_heads"]; !ok && wantHeads >= 0 || ok && wantHeads < 0 || ok && string(n) != fmt.Sprint(wantHeads) {
			t.Errorf("step %d: qk_clipped_heads %q, want %d (-1: absent)", s, n, wantHeads)
		}
		for k, want := range map[string]float64{"max_grad_norm": wantMGN, "lr_scale": wantScale, "skip_sigma": wantSkip, "qk_clip_tau": wantTau, "update_clip_sigma": 2, "z_loss_weight": 0} {
			if v := field[float64](t, b, k); v != want {
				t.Errorf("step %d: %s = %g, want %g", s, k, v, want)
			}
			if v := field[float64](t, a, k); k == "max_grad_norm" && v != 10 {
				t.Errorf("step %d without a schedule: max_grad_norm = %g, want 10", s, v)
			}
		}
	}
	if !differs {
		t.Error("max_grad_norm 1 from step 6 changed nothing in steps 6-8")
	}
	for i := 8; i < 12; i++ {
		if g, w := field[float64](t, got[i], "learning_rate"), field[float64](t, refL[i], "learning_rate"); g != 0.5*w {
			t.Errorf("step %d: learning_rate %g under lr_scale 0.5, want %g", i+1, g, 0.5*w)
		}
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
	a, b := filepath.Join(dir, "checkpoints", checkpoint.Name(12)), filepath.Join(crash, "checkpoints", checkpoint.Name(12))
	for _, f := range []string{checkpoint.ModelFile, checkpoint.OptimizerFile, checkpoint.EMAFile} {
		if fileSum(t, a, f) != fileSum(t, b, f) {
			t.Errorf("%s differs between the uninterrupted and the resumed run", f)
		}
	}
}

// TestKnobScheduleToggles: update clipping turned off and a z-loss turned on
// by the schedule take effect at their step and show in the metrics.
func TestKnobScheduleToggles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	o := baseOpts(dir)
	o.Optim.Knobs = []optim.KnobStep{{Step: 7, ClipUpdateNorm: ptr(false), ZLoss: ptr(1e-2)}}
	if _, err := Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	sawThreshold := false
	for i, m := range readLines(t, dir) {
		s := i + 1
		_, thr := m["update_clip_threshold"]
		zl, sigma, w := field[float64](t, m, "z_loss"), field[float64](t, m, "update_clip_sigma"), field[float64](t, m, "z_loss_weight")
		if s < 7 {
			sawThreshold = sawThreshold || thr
			if zl != 0 || w != 0 || sigma != 2 {
				t.Errorf("step %d: z_loss %g, z_loss_weight %g, update_clip_sigma %g before the entry", s, zl, w, sigma)
			}
			continue
		}
		if thr || sigma != 0 {
			t.Errorf("step %d: update clipping still on (threshold %v, update_clip_sigma %g)", s, thr, sigma)
		}
		if !(zl > 0) || w != 1e-2 {
			t.Errorf("step %d: z_loss %g, z_loss_weight %g with z_loss 1e-2 in force", s, zl, w)
		}
	}
	if !sawThreshold {
		t.Error("update clipping was never active before step 7: the test shows nothing")
	}
}
