package monitor

import (
	"fmt"
	"math"
)

// throughputRule is the SEV1 throughput_drop rule on tokens_per_sec and
// mfu, and the SEV2 contention it becomes when other work took the cores
// (second witnesses: contention.go). It is live only: the machine's speed
// before a restart is no baseline for after it. Steps that include an
// evaluation or a checkpoint are slow by design and left out.
type throughputRule struct {
	ctx      *ruleCtx
	tps      *ring
	mfu      *ring
	cpuTok   *ring         // process CPU seconds per token, beside tps (NaN = not measured)
	wallStep *ring         // step_time, beside tps
	cpuStep  *ring         // cpu_time, beside tps
	witness  *witnessRings // the second witnesses, beside tps (nil until tokens_per_sec is seen)
}

func newThroughputRule(c *ruleCtx) *throughputRule {
	w := c.cfg.Window
	return &throughputRule{ctx: c, tps: newRing(w), mfu: newRing(w), cpuTok: newRing(w), wallStep: newRing(w), cpuStep: newRing(w)}
}

func (f *throughputRule) liveOnly() {}

func (f *throughputRule) observe(s *Sample, out *[]Alert) {
	v := s.Values
	if v["eval_time"] > 0 || v["checkpoint_time"] > 0 {
		return
	}
	// CPU time per token beside wall time per token (1/tokens_per_sec), in
	// step with the tokens_per_sec window.
	if tps, ok := v["tokens_per_sec"]; ok && finite(tps) {
		cpu, st := v["cpu_time"], v["step_time"]
		if finite(cpu) && cpu > 0 && finite(st) && st > 0 && tps > 0 {
			f.cpuTok.push(cpu / (tps * st))
			f.wallStep.push(st)
			f.cpuStep.push(cpu)
		} else {
			f.cpuTok.push(math.NaN())
			f.wallStep.push(math.NaN())
			f.cpuStep.push(math.NaN())
		}
		if f.witness == nil {
			w := f.ctx.cfg.Window
			f.witness = &witnessRings{steal: newRing(w), preempt: newRing(w), wait: newRing(w)}
		}
		f.witness.push(v)
	}
	f.drop(out, s, "tokens_per_sec", f.tps)
	f.drop(out, s, "mfu", f.mfu)
}

// drop fires when the short median of name falls ThroughputDrop below the
// median of the window before it: SEV2 contention when a second witness
// (cpu_steal_frac, involuntary_ctx_switches: contention.go) saw other work
// take the cores, else SEV1 throughput_drop; without a witness in the
// samples, contention when the process CPU time per token rose by less
// than ContentionShare of the wall-time rise, as the message then says.
// Contention and throughput_drop are one incident: within the cooldown of
// either, neither fires again.
func (f *throughputRule) drop(out *[]Alert, s *Sample, name string, rg *ring) {
	x, ok := s.Values[name]
	if !ok || !finite(x) {
		return
	}
	rg.push(x)
	if !rg.full {
		return
	}
	c := f.ctx
	all := rg.values()
	short := max(8, len(all)/4)
	ref := median(append([]float64(nil), all[:len(all)-short]...))
	now := median(append([]float64(nil), all[len(all)-short:]...))
	if !(ref > 0 && now < (1-c.cfg.ThroughputDrop)*ref) {
		return
	}
	for _, rule := range []string{RuleContention, RuleThroughputDrop} {
		if last, ok := c.lastFired[rule]; ok && s.Step-last < int64(max(1, c.cfg.Cooldown)) {
			return // the incident is open: the same evidence, not a second page
		}
	}
	rule, msg := f.verdict(short, ref, now)
	c.fire(out, s, rule, name, now, (1-c.cfg.ThroughputDrop)*ref,
		fmt.Sprintf("%s median of the last %d steps %.4g is %.0f%% below the preceding median %.4g", name, short, now, 100*(1-now/ref), ref)+msg)
}

// verdict names the rule of a drop from ref to now over the last short
// steps, contention or throughput_drop, and the evidence for it.
func (f *throughputRule) verdict(short int, ref, now float64) (rule, msg string) {
	cpuSeen, cpuLags, cpuEv := false, false, ""
	if cpuRef, cpuNow, ok := splitMedians(f.cpuTok, short); ok && cpuRef > 0 {
		wallRise, cpuRise := ref/now-1, cpuNow/cpuRef-1
		wRef, wNow, _ := splitMedians(f.wallStep, short)
		cRef, cNow, _ := splitMedians(f.cpuStep, short)
		cpuSeen, cpuLags = true, cpuRise < f.ctx.cfg.ContentionShare*wallRise
		cpuEv = fmt.Sprintf("wall time per step (median) %.4g s → %.4g s, process CPU time per step (median) %.4g s → %.4g s; per token wall time grew %.0f%%, CPU time %s",
			wRef, wNow, cRef, cNow, 100*wallRise, riseText(cpuRise))
	}
	var wit witnessVerdict
	if f.witness != nil {
		wallRise := math.NaN()
		if wRef, wNow, ok := splitMedians(f.wallStep, short); ok {
			wallRise = wNow - wRef
		}
		wit = f.witness.verdict(short, wallRise)
	}
	switch {
	case wit.says:
		msg = "; other work holds the cores: " + wit.evidence
		if cpuSeen {
			msg += "; " + cpuEv
		}
		return RuleContention, msg
	case wit.seen:
		msg = "; no other work seen on the cores (" + wit.evidence + ")"
		if cpuSeen {
			msg += ": " + cpuEv
		}
		return RuleThroughputDrop, msg
	case cpuSeen && cpuLags:
		return RuleContention, fmt.Sprintf("; CPU time per token grew less than %.0f%% of the wall-time rise, so other work holds the cores (judged on CPU time alone: the samples carry no second witness, cpu_steal_frac or involuntary_ctx_switches): ", 100*f.ctx.cfg.ContentionShare) + cpuEv
	case cpuSeen:
		return RuleThroughputDrop, "; kestrel's own CPU time grew with it (no second witness in the samples): " + cpuEv
	}
	return RuleThroughputDrop, ""
}

// splitMedians returns the medians of the finite values of rg before and
// in its last short entries; ok is false unless rg is full and each part
// has at least half of its entries finite.
func splitMedians(rg *ring, short int) (ref, now float64, ok bool) {
	if !rg.full {
		return 0, 0, false
	}
	all := rg.values()
	if short >= len(all) {
		return 0, 0, false
	}
	fin := func(xs []float64) []float64 {
		var out []float64
		for _, x := range xs {
			if finite(x) {
				out = append(out, x)
			}
		}
		return out
	}
	a, b := fin(all[:len(all)-short]), fin(all[len(all)-short:])
	if 2*len(a) < len(all)-short || 2*len(b) < short {
		return 0, 0, false
	}
	return median(a), median(b), true
}
