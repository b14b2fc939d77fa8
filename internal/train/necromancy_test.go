package train

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/checkpoint"
)

func readState(t *testing.T, dir string, step int) checkpoint.State {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "checkpoints", checkpoint.Name(step), checkpoint.StateFile))
	if err != nil {
		t.Fatal(err)
	}
	var s checkpoint.State
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	return s
}

func stepLine(t *testing.T, dir string, step int) map[string]json.RawMessage {
	t.Helper()
	for _, l := range readLines(t, dir) {
		var s int
		json.Unmarshal(l["step"], &s)
		if s == step {
			return l
		}
	}
	t.Fatalf("%s: no step %d line", dir, step)
	return nil
}

func num(t *testing.T, l map[string]json.RawMessage, key string) float64 {
	t.Helper()
	var x float64
	if err := json.Unmarshal(l[key], &x); err != nil {
		t.Fatalf("step %s: %s = %s: %v", l["step"], key, l[key], err)
	}
	return x
}

// checkFreshMoments: after one step from zeroed moments, m = (1−β1)·ĝ with
// ĝ the clipped gradient, so adam_m_norm = (1−β1)·min(grad_norm,
// max_grad_norm); with the source's moments it is far from that.
func checkFreshMoments(t *testing.T, o Options, l map[string]json.RawMessage) {
	t.Helper()
	g := math.Min(num(t, l, "grad_global_norm"), o.Optim.MaxGradNorm)
	want := (1 - o.Optim.Beta1) * g
	if got := num(t, l, "adam_m_norm"); math.Abs(got-want) > 1e-3*want {
		t.Errorf("step %s: adam_m_norm %g, want (1−β1)·%g = %g (moments reset)", l["step"], got, g, want)
	}
	if _, ok := l["update_clip_threshold"]; !ok {
		t.Errorf("step %s: no update_clip_threshold: the update-clip window was not seeded", l["step"])
	}
	if x := num(t, l, "train_loss_raw"); math.IsNaN(x) || math.IsInf(x, 0) {
		t.Errorf("step %s: loss %g", l["step"], x)
	}
}

// TestNecromancy: init.necromancy resets the Adam moments and step count
// and seeds the clip/skip windows from the checkpoint, on a warm-start
// (whose weights mode otherwise starts with empty windows) and on a
// resume; a later resume under the same generation does not reset again.
func TestNecromancy(t *testing.T) {
	root := t.TempDir()
	src := filepath.Join(root, "src")
	o := baseOpts(src)
	if _, err := Run(context.Background(), o); err != nil { // 12 steps, checkpoints every 4
		t.Fatal(err)
	}
	if s := readState(t, src, 12); s.AdamSteps == 0 || s.UpdateNorms.Len() < o.Optim.UpdateMinSteps {
		t.Fatalf("source checkpoint: adam_steps %d, update window %d", s.AdamSteps, s.UpdateNorms.Len())
	}

	t.Run("warm-start", func(t *testing.T) {
		for _, gen := range []int{0, 1} {
			dir := filepath.Join(root, "warm", string(rune('0'+gen)))
			w := baseOpts(dir)
			w.Init.From, w.Init.Necromancy = filepath.Join(src, "checkpoints", checkpoint.Name(12)), gen
			w.Train.Steps = 4
			if _, err := Run(context.Background(), w); err != nil {
				t.Fatal(err)
			}
			first := stepLine(t, dir, 1)
			if gen == 0 { // weights mode: fresh windows, clipping inactive at first
				if thr, ok := first["update_clip_threshold"]; ok {
					t.Errorf("without necromancy: update_clip_threshold %s at the first step", thr)
				}
				continue
			}
			checkFreshMoments(t, w, first)
			if s := readState(t, dir, 4); s.Necromancy != 1 || s.NecromancyStep != 0 {
				t.Errorf("state: necromancy %d at step %d, want 1 at 0", s.Necromancy, s.NecromancyStep)
			}
		}
	})

	t.Run("resume", func(t *testing.T) {
		dir := filepath.Join(root, "resume")
		if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
			t.Fatal(err)
		}
		r := baseOpts(dir)
		r.Init.Necromancy = 1
		r.Train.Steps = 14
		if _, err := Run(context.Background(), r); err != nil {
			t.Fatal(err)
		}
		checkFreshMoments(t, r, stepLine(t, dir, 13))
		s := readState(t, dir, 14)
		if s.Necromancy != 1 || s.NecromancyStep != 12 || s.AdamSteps != 2-s.SkippedUpdates+readState(t, src, 12).SkippedUpdates {
			t.Errorf("state after the reset: necromancy %d at step %d, adam_steps %d; want 1 at 12, 2", s.Necromancy, s.NecromancyStep, s.AdamSteps)
		}
		// The same generation again: a plain resume, the moments carry on.
		r.Train.Steps = 16
		if _, err := Run(context.Background(), r); err != nil {
			t.Fatal(err)
		}
		if s := readState(t, dir, 16); s.NecromancyStep != 12 || s.AdamSteps != 4-s.SkippedUpdates+readState(t, src, 12).SkippedUpdates {
			t.Errorf("second resume: necromancy_step %d, adam_steps %d; want 12, 4 (no second reset)", s.NecromancyStep, s.AdamSteps)
		}
	})
}

func TestNecromancyValidated(t *testing.T) {
	if err := (InitConfig{Mode: "weights", Necromancy: -1}).Validate(); err == nil || !strings.Contains(err.Error(), "init.necromancy") {
		t.Errorf("init.necromancy = -1: %v", err)
	}
	dir := filepath.Join(t.TempDir(), "run")
	o := baseOpts(dir)
	o.Train.Steps = 4
	if _, err := Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	rewriteState(t, filepath.Join(dir, "checkpoints", checkpoint.Name(4)), func(m map[string]any) { m["necromancy_step"] = 9 })
	if _, err := checkpoint.Latest(filepath.Join(dir, "checkpoints"), o.Logger); err == nil || !strings.Contains(err.Error(), "necromancy_step") {
		t.Errorf("necromancy_step after the step: %v", err)
	}
}
