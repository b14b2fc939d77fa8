package train

import (
	"github.com/kestrel-lm/kestrel/internal/checkpoint"
	"github.com/kestrel-lm/kestrel/internal/optim"
)

// necromancy applies init.necromancy when this invocation starts from the
// checkpoint whose state is src (a resume or rewind: the run's own
// checkpoint; a warm-start: init.from's): if src records a lower
// necromancy generation than init.necromancy, Adam's moments and its
// bias-correction step count are reset (optim.AdamW.ResetMoments) and the
// update-clip and skip-step windows are seeded from src's windows (re-capped
// to the configured sizes), so update clipping and skip-step hold from the
// first step instead of after update_clip_min_steps / skip_min_steps fresh
// entries. The weights, the EMA, the data position and the LR schedule are
// left as they are. The reset is recorded in the state (necromancy,
// necromancy_step), so a resume from a checkpoint written afterwards does
// not reset again; a rewind to a checkpoint from before it does.
//
// The first updates after the reset are close to sign(g) (Adam with fresh
// moments), larger than the seeded history: with optim.clip_update_norm the
// history's threshold caps them, which is the point of seeding it.
func (t *trainer) necromancy(src checkpoint.State, from string) {
	g := t.o.Init.Necromancy
	if g <= 0 || src.Necromancy >= g {
		return
	}
	t.opt.ResetMoments()
	t.restoreWindows(src)
	t.st.Necromancy, t.st.NecromancyStep = g, t.st.Step
	upd, loss, gn := winLen(t.opt.UpdateNorms), winLen(t.opt.Losses), winLen(t.opt.GradNorms)
	t.log.Info("necromancy: Adam moments and step count reset, clip/skip windows seeded from the checkpoint",
		"generation", g, "from", from, "step", t.st.Step, "update_window", upd, "loss_window", loss, "grad_norm_window", gn)
	oc := t.o.Optim
	if (oc.ClipUpdateNorm && upd < oc.UpdateMinSteps) || (oc.SkipBadSteps && min(loss, gn) < oc.SkipMinSteps) {
		t.log.Warn("necromancy: the checkpoint's windows hold fewer values than their minimum; clipping or skipping waits for fresh steps",
			"update_window", upd, "update_clip_min_steps", oc.UpdateMinSteps, "skip_window", min(loss, gn), "skip_min_steps", oc.SkipMinSteps)
	}
}

func winLen(w *optim.Window) int {
	if w == nil {
		return 0
	}
	return w.Len()
}
