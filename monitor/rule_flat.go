package monitor

import (
	"fmt"
	"math"
	"sort"
)

// flatLossRule is seed 000's red flag "flat loss early (after warm-up)",
// SEV1 flat_loss_after_warmup: for flat_loss_windows windows of window
// steps after warm-up, the median train_loss_raw of each must fall
// flat_loss_drop below that of the window before it (window 0 is the last
// window of warm-up). A window seen with fewer than 4 samples (a resumed
// run, a sparse log) is not compared. The end of warm-up is the configured
// warm-up, else the last step at which learning_rate rose, else step 0
// when the samples carry no learning_rate.
type flatLossRule struct {
	ctx    *ruleCtx
	warm   int64   // last warm-up step; -1 = not known yet (taken from learning_rate)
	lastLR float64 // learning_rate of the previous step (NaN = none)
	recent []stepLoss
	meds   map[int64]float64 // window index → median train_loss_raw
	done   bool
}

type stepLoss struct {
	step int64
	loss float64
}

func newFlatLossRule(c *ruleCtx, warmup int) *flatLossRule {
	f := &flatLossRule{ctx: c, warm: int64(warmup), lastLR: math.NaN(), meds: map[int64]float64{}}
	if warmup <= 0 {
		f.warm = -1
	}
	return f
}

func (f *flatLossRule) observe(s *Sample, out *[]Alert) {
	cfg := f.ctx.cfg
	if f.done || cfg.FlatLossWindows <= 0 {
		return
	}
	x, ok := s.Values["train_loss_raw"]
	if !ok || !finite(x) {
		return
	}
	if f.warm < 0 {
		f.findWarmup(s)
	}
	f.recent = append(f.recent, stepLoss{s.Step, x})
	if f.warm < 0 {
		if len(f.recent) > 2*cfg.Window {
			f.recent = f.recent[len(f.recent)-cfg.Window:]
		}
		return
	}
	byWin := f.closeWindows(s.Step)
	wins := make([]int64, 0, len(byWin))
	for k := range byWin {
		wins = append(wins, k)
	}
	sort.Slice(wins, func(i, j int) bool { return wins[i] < wins[j] })
	for _, k := range wins {
		f.judge(out, s, k, byWin[k])
	}
}

// findWarmup reads the end of warm-up from learning_rate: the step before
// the first step at which it did not rise.
func (f *flatLossRule) findWarmup(s *Sample) {
	lr, has := s.Values["learning_rate"]
	switch {
	case !has || !finite(lr):
		if math.IsNaN(f.lastLR) {
			f.warm = 0 // no schedule to read: count from the start
		}
	case !math.IsNaN(f.lastLR) && lr <= f.lastLR:
		f.warm = max(0, s.Step-1)
	default:
		f.lastLR = lr
	}
}

// window is the window index of a step: 0 for (warm−w, warm], k for
// (warm+(k−1)w, warm+kw], -1 before.
func (f *flatLossRule) window(step int64) int64 {
	w := int64(f.ctx.cfg.Window)
	if step <= f.warm {
		if step > f.warm-w {
			return 0
		}
		return -1
	}
	return (step - f.warm + w - 1) / w
}

// closeWindows takes out of recent the losses of every window that ended
// by step, by window index.
func (f *flatLossRule) closeWindows(step int64) map[int64][]float64 {
	w := int64(f.ctx.cfg.Window)
	cur := f.window(step)
	var keep []stepLoss
	byWin := map[int64][]float64{}
	for _, p := range f.recent {
		k := f.window(p.step)
		if k < 0 {
			continue
		}
		if k < cur || step == f.warm+k*w {
			byWin[k] = append(byWin[k], p.loss)
		} else {
			keep = append(keep, p)
		}
	}
	f.recent = keep
	return byWin
}

// judge closes window k with its losses ls and compares its median with
// the window before it.
func (f *flatLossRule) judge(out *[]Alert, s *Sample, k int64, ls []float64) {
	cfg := f.ctx.cfg
	w := int64(cfg.Window)
	if len(ls) < 4 {
		f.meds[k] = math.NaN()
	} else {
		f.meds[k] = median(ls)
	}
	if k >= int64(cfg.FlatLossWindows) {
		f.done = true
	}
	prev, okPrev := f.meds[k-1]
	now := f.meds[k]
	if k < 1 || !okPrev || !finite(prev) || !finite(now) || prev == 0 {
		return
	}
	if drop := (prev - now) / math.Abs(prev); drop < cfg.FlatLossDrop {
		from := f.warm + (k-1)*w + 1
		f.ctx.fire(out, s, RuleFlatLoss, "train_loss_raw", now, prev*(1-cfg.FlatLossDrop),
			fmt.Sprintf("train_loss_raw median %.4g over steps %d-%d after warm-up (ends at step %d) is %.2f%% below the %.4g of the %d steps before, less than flat_loss_drop %.2f%%: the run is not learning",
				now, from, from+w-1, f.warm, 100*drop, prev, w, 100*cfg.FlatLossDrop))
		f.done = true
	}
}
