package monitor

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// clipRule is the SEV1 clip_rate_rising rule: the rate of clipped steps
// over the last window rose over the rate of the (up to clip_baseline)
// steps before them — a rise, not a high level. Its window also gives the
// derived grad_clip_rate.
type clipRule struct {
	ctx    *ruleCtx
	window *ring // clip flags of the baseline and the window
}

func newClipRule(c *ruleCtx) *clipRule {
	return &clipRule{ctx: c, window: newRing(c.cfg.ClipBaseline + c.cfg.Window)}
}

func (f *clipRule) observe(s *Sample, out *[]Alert) {
	x, ok := s.Values["grad_clipped"]
	if !ok {
		return
	}
	c, cfg := 0.0, f.ctx.cfg
	if x > 0 {
		c = 1
	}
	f.window.push(c)
	if cur, base, n, ok := f.rates(); ok && cur > cfg.ClipRate && base < cfg.ClipRate && cur-base >= cfg.ClipRise {
		f.ctx.fire(out, s, RuleClipRate, "grad_clip_rate", cur, base+cfg.ClipRise,
			fmt.Sprintf("grad_clip_rate %.0f%% over the last %d steps, up from %.0f%% over the %d steps before", 100*cur, cfg.Window, 100*base, n))
	}
}

// rates returns the clip rate of the last window steps, the rate of the
// (up to clip_baseline) steps before them and their number; ok is false
// until the baseline holds at least window steps.
func (f *clipRule) rates() (cur, base float64, n int, ok bool) {
	all := f.window.values()
	w := f.ctx.cfg.Window
	if len(all) < 2*w {
		return 0, 0, 0, false
	}
	return meanOf(all[len(all)-w:]), meanOf(all[:len(all)-w]), len(all) - w, true
}

// mixRule is the SEV2 mixture_drift rule: a source's share of the batches
// (source_mix_share/…) differs, on average over a window, from its weight
// in the data stage in force at each step.
type mixRule struct {
	ctx   *ruleCtx
	rings map[string]*ring // per source: share − target of each step
}

func (f *mixRule) observe(s *Sample, out *[]Alert) {
	sc, cfg := &f.ctx.sched, f.ctx.cfg
	if len(sc.stages) == 0 {
		return
	}
	var names []string
	for name := range s.Values {
		if strings.HasPrefix(name, "source_mix_share/") {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		x := s.Values[name]
		src := strings.TrimPrefix(name, "source_mix_share/")
		tgt, ok := sc.targetAt(s.Step, src)
		if !ok || !finite(x) {
			continue
		}
		rg := f.rings[src]
		if rg == nil {
			rg = newRing(cfg.Window)
			f.rings[src] = rg
		}
		// The ring holds share − target, so a window that straddles a
		// stage boundary compares each step with its own stage.
		rg.push(x - tgt)
		if !rg.full {
			continue
		}
		if d := rg.mean(); math.Abs(d) > cfg.MixDrift {
			msg := fmt.Sprintf("source %s: mean share %.3f over %d steps vs target %.3f", src, tgt+d, cfg.Window, tgt)
			if len(sc.stages) > 1 {
				msg = fmt.Sprintf("source %s: share differs by %+.3f (mean over %d steps) from the weights of the data stages in force (now %.3f, the stage from step %d)", src, d, cfg.Window, tgt, sc.stageStart(s.Step))
				if r := sc.rampOf(s.Step); r > 0 {
					msg = fmt.Sprintf("source %s: share differs by %+.3f (mean over %d steps) from the weights of the data stages in force (now %.3f, ramping over %d steps from step %d)", src, d, cfg.Window, tgt, r, sc.stageStart(s.Step))
				}
			}
			f.ctx.fire(out, s, RuleMixDrift, name, tgt+d, tgt, msg)
		}
	}
}

// stallRule is the SEV2 dataloader_stall rule: the mean
// dataloader_stall_frac over a window above stall_frac.
type stallRule struct {
	ctx    *ruleCtx
	window *ring
}

func (f *stallRule) observe(s *Sample, out *[]Alert) {
	x, ok := s.Values["dataloader_stall_frac"]
	if !ok || !finite(x) {
		return
	}
	cfg := f.ctx.cfg
	f.window.push(x)
	if !f.window.full {
		return
	}
	if m := f.window.mean(); m > cfg.StallFrac {
		f.ctx.fire(out, s, RuleStall, "dataloader_stall_frac", m, cfg.StallFrac,
			fmt.Sprintf("dataloader_stall_frac %.0f%% (mean of %d steps) > %.0f%%", 100*m, cfg.Window, 100*cfg.StallFrac))
	}
}
