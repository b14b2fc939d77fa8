package monitor

import (
	"fmt"
	"math"
	"strings"
)

// The batch checks: each step's data vitals (internal/train measures them
// on the batch the model trains on) against the batches before it.
//
//   - batch_anomaly (SEV1): batch_token_entropy moved by more than
//     batch_entropy_shift nats — random, repeated or foreign tokens, the
//     gross case the rescue ladder acts on (a data_event).
//   - garbage_batch (SEV2): any data vital left its robust band — finer
//     garbage such as base64, markup or another script, which moves the
//     entropy by less than a nat but the share of non-letter bytes, the
//     bytes per token or the longest run of one token by many robust σ.
//
// One batch raises at most one of them: batch_anomaly when its criterion
// holds (its message then carries garbage_batch's evidence too), else
// garbage_batch. Both name the batch's sources and documents.

// batchVital is one vital garbage_batch judges.
type batchVital struct {
	name string
	// up and down say which moves count (a run of one token only grows).
	up, down bool
	// floor is the least deviation from the window median med that counts;
	// few is true while the window holds fewer than fewBatches batches, when
	// the robust σ is not yet known and the floor is wider.
	floor func(med float64, few bool) float64
	unit  string
}

// fewBatches is the number of batches in garbage_batch's window below
// which the wide floors apply (a MAD of fewer batches is itself noise).
const fewBatches = 16

// batchVitals are garbage_batch's vitals. The floors come from healthy
// shakespeare-char batches (12×64 bytes, 2,000 steps): entropy 3.27 nats,
// σ 0.067, every batch within 0.3 nats of the median; non-letter share
// 0.048, σ 0.008, within 0.03; longest run 2–3. Random base64 moves them
// to 4.12 nats and 0.19: past the wide floors from the second step.
var batchVitals = []batchVital{
	{name: "batch_token_entropy", up: true, down: true, unit: " nats", floor: func(_ float64, few bool) float64 {
		return pick(few, 0.5, 0.15)
	}},
	{name: "batch_bytes_per_token", up: true, down: true, floor: func(med float64, few bool) float64 {
		return pick(few, 0.3, 0.15) * math.Abs(med)
	}},
	{name: "batch_nonletter_frac", up: true, down: true, floor: func(_ float64, few bool) float64 {
		return pick(few, 0.1, 0.03)
	}},
	{name: "batch_max_token_run", up: true, floor: func(med float64, _ bool) float64 {
		return math.Max(3*med, 24)
	}},
}

func pick(few bool, a, b float64) float64 {
	if few {
		return a
	}
	return b
}

// batchRule is the batch family: batch_anomaly's window of
// batch_token_entropy and garbage_batch's windows of every data vital.
type batchRule struct {
	ctx      *ruleCtx
	batchEnt *ring // batch_token_entropy (batch_anomaly baseline)
	rings    map[string]*ring
	// out holds the vitals of the consecutive batches outside the band
	// (oldest first); after levelShiftBatches of them the data changed
	// level for good and the windows re-base on them.
	out      []map[string]float64
	lastStep int64
	// outside is set for a step whose batch was outside the band (either
	// rule, fired or in its cooldown): what the spike verdict cites.
	outside *garbageNote
	// before holds the windows a level change replaced: a batch back at
	// that level is the run's earlier data, not garbage, and restores them.
	before map[string]*ring
}

// garbageNote is a batch outside the band, as a loss spike cites it.
type garbageNote struct {
	step int64
	what string // the vitals outside, "batch_nonletter_frac 0.19 (median …)"
}

func newBatchRule(c *ruleCtx) *batchRule {
	return &batchRule{ctx: c, batchEnt: newRing(c.cfg.Window), rings: map[string]*ring{}, lastStep: math.MinInt64}
}

// levelShiftBatches is the number of consecutive batches outside the band
// after which garbage_batch takes the new level as the run's data.
func (r *batchRule) levelShiftBatches() int { return max(8, r.ctx.cfg.Window/4) }

// batchFinding is one vital outside its band.
type batchFinding struct {
	name, unit       string
	x, med, thr, rel float64
	n                int
}

func (f batchFinding) String() string {
	return fmt.Sprintf("%s %.4g%s (median %.4g of the last %d batches, bound ±%.3g)", f.name, f.x, f.unit, f.med, f.n, f.thr)
}

// observe runs batch_anomaly and garbage_batch on one step's batch.
func (r *batchRule) observe(s *Sample, out *[]Alert) {
	if r.ctx.sched.stageStartsIn(r.lastStep, s.Step) {
		// A planned change of the mixture: the data's vitals may move to a
		// new level; the stage's own batches are the new baseline.
		clear(r.rings)
		r.out, r.before = nil, nil
	}
	r.lastStep = s.Step
	r.outside = nil
	found := r.garbageFindings(s, r.rings)
	if len(found) > 0 && r.before != nil && len(r.garbageFindings(s, r.before)) == 0 {
		r.rings, r.before, r.out, found = r.before, nil, nil, nil // back to the level before
	}
	anomaly := r.batchAnomaly(out, s, found)
	if anomaly || len(found) > 0 {
		r.outside = &garbageNote{step: s.Step, what: findingsText(found)}
		if anomaly {
			r.outside.what = "batch_token_entropy beyond batch_entropy_shift (batch_anomaly)"
		}
		r.noteOutside(s)
		if !anomaly {
			r.fireGarbage(out, s, found)
		}
		return
	}
	r.out = r.out[:0]
	r.pushVitals(s.Values)
}

// garbageFindings judges each vital of s against its window in rings.
func (r *batchRule) garbageFindings(s *Sample, rings map[string]*ring) []batchFinding {
	if r.ctx.cfg.GarbageBatchSigma <= 0 {
		return nil
	}
	var found []batchFinding
	for _, bv := range batchVitals {
		x, ok := s.Values[bv.name]
		rg := rings[bv.name]
		if !ok || !finite(x) || rg == nil || rg.len() == 0 {
			continue
		}
		n := rg.len()
		med, sig := robust(rg.values())
		few := n < fewBatches
		thr := bv.floor(med, few)
		if !few {
			thr = math.Max(thr, r.ctx.cfg.GarbageBatchSigma*sig)
		}
		if d := x - med; thr > 0 && (d > thr && bv.up || -d > thr && bv.down) {
			found = append(found, batchFinding{name: bv.name, unit: bv.unit, x: x, med: med, thr: thr, rel: math.Abs(d) / thr, n: n})
		}
	}
	return found
}

// pushVitals adds a batch's vitals to garbage_batch's windows.
func (r *batchRule) pushVitals(v map[string]float64) {
	for _, bv := range batchVitals {
		x, ok := v[bv.name]
		if !ok || !finite(x) {
			continue
		}
		rg := r.rings[bv.name]
		if rg == nil {
			rg = newRing(r.ctx.cfg.Window)
			r.rings[bv.name] = rg
		}
		rg.push(x)
	}
}

// noteOutside keeps the vitals of a batch outside the band; a run of
// levelShiftBatches of them re-bases the windows (the data changed level,
// and a frozen window would call every later batch garbage), keeping the
// windows it replaced for a return to the earlier level.
func (r *batchRule) noteOutside(s *Sample) {
	cp := map[string]float64{}
	for _, bv := range batchVitals {
		if x, ok := s.Values[bv.name]; ok {
			cp[bv.name] = x
		}
	}
	r.out = append(r.out, cp)
	if len(r.out) < r.levelShiftBatches() {
		return
	}
	r.before, r.rings = r.rings, map[string]*ring{}
	for _, v := range r.out {
		r.pushVitals(v)
	}
	r.out = nil
}

func findingsText(found []batchFinding) string {
	parts := make([]string, len(found))
	for i, f := range found {
		parts[i] = f.String()
	}
	return strings.Join(parts, "; ")
}

// fireGarbage raises garbage_batch with every vital outside its band, the
// batch's sources and documents.
func (r *batchRule) fireGarbage(out *[]Alert, s *Sample, found []batchFinding) {
	worst := found[0]
	for _, f := range found {
		if f.rel > worst.rel {
			worst = f
		}
	}
	msg := fmt.Sprintf("the batch of step %d does not look like the run's data: %s", s.Step, findingsText(found))
	msg += fewNote(worst.n) + batchWhere(s.Batch)
	r.ctx.fire(out, s, RuleGarbageBatch, worst.name, worst.x, worst.med+math.Copysign(worst.thr, worst.x-worst.med), msg)
}

// fewNote says when a verdict rests on one or two batches: the batch
// judged, or the ones before it, may be the odd one.
func fewNote(n int) string {
	if n >= 3 {
		return ""
	}
	return fmt.Sprintf(" (judged against only %d batch%s before it: either this batch or %s unlike the run's data)", n, map[bool]string{true: "", false: "es"}[n == 1], map[bool]string{true: "that one is", false: "those are"}[n == 1])
}

// batchWhere names a batch's sources and documents for an alert.
func batchWhere(b *Batch) string {
	if b == nil {
		return "; the data source does not describe its batches (bytes: `kestrel replay RUN --steps N:N --decode` prints its rows)"
	}
	var out string
	if len(b.Sources) > 0 {
		out += "; sources " + listHead(b.Sources, 8)
	}
	if len(b.DocIDs) > 0 {
		out += "; documents " + listHead(b.DocIDs, 8)
	}
	return out
}

// batchAnomaly is the SEV1 batch_anomaly rule: the unigram entropy of a
// batch's tokens (batch_token_entropy) differs from the median of the
// window by more than max(batch_entropy_shift, 8 × the window's robust
// spread). Text batches of one run hold their entropy within a few
// hundredths of a nat; a batch of random tokens rises towards ln(tokens),
// one of a repeated token falls towards 0. It needs only 3 earlier
// batches (seeded from the run's history on a resume), so it holds at
// step 4 of a fresh run. Firing values stay out of the window. It reports
// whether its criterion held; found (garbage_batch's evidence) joins its
// message.
func (r *batchRule) batchAnomaly(out *[]Alert, s *Sample, found []batchFinding) bool {
	x, ok := s.Values["batch_token_entropy"]
	if !ok || !finite(x) || r.ctx.cfg.BatchEntropyShift <= 0 {
		return false
	}
	if r.batchEnt.len() >= 3 {
		med, sig := robust(r.batchEnt.values())
		thr := math.Max(r.ctx.cfg.BatchEntropyShift, 8*sig)
		if d := x - med; math.Abs(d) > thr {
			dir := "rose"
			if d < 0 {
				dir = "fell"
			}
			msg := fmt.Sprintf("batch_token_entropy %.4g nats %s %.3g from the median %.4g of the last %d batches (bound ±%.3g): this batch does not look like the run's data (random, repeated or foreign tokens)",
				x, dir, math.Abs(d), med, r.batchEnt.len(), thr)
			var also []string
			for _, f := range found {
				if f.name != "batch_token_entropy" {
					also = append(also, f.String())
				}
			}
			if len(also) > 0 {
				msg += "; also " + strings.Join(also, "; ")
			}
			r.ctx.fire(out, s, RuleBatchAnomaly, "batch_token_entropy", x, med+math.Copysign(thr, d), msg+batchWhere(s.Batch))
			return true
		}
	}
	if len(found) == 0 {
		r.batchEnt.push(x)
	}
	return false
}

// validateGaps reports the batch-check and alert-gap fields out of range.
func (c Config) validateGaps() []error {
	var errs []error
	for _, f := range []struct {
		n string
		v float64
	}{{"garbage_batch_sigma", c.GarbageBatchSigma}, {"val_jump", c.ValJump}, {"val_jump_frac", c.ValJumpFrac}, {"restart_storm_minutes", c.RestartStormMinutes}} {
		if !(f.v >= 0) || math.IsInf(f.v, 0) {
			errs = append(errs, fmt.Errorf("monitor.%s must be a finite number >= 0, got %g", f.n, f.v))
		}
	}
	if c.RestartStormStarts < 0 {
		errs = append(errs, fmt.Errorf("monitor.restart_storm_starts must be >= 0 (0 = off), got %d", c.RestartStormStarts))
	}
	if c.RestartStormStarts > 0 && !(c.RestartStormMinutes > 0) {
		errs = append(errs, fmt.Errorf("monitor.restart_storm_minutes must be > 0 when restart_storm_starts is set, got %g", c.RestartStormMinutes))
	}
	return errs
}

// noteGarbage records a batch the batch checks found outside the band.
func (c *SpikeClassifier) noteGarbage(n garbageNote) {
	c.garbage = append(c.garbage, n)
	if len(c.garbage) > 8 {
		c.garbage = c.garbage[1:]
	}
}

// garbageBefore cites the newest batch outside the band within
// spike_lookback steps up to step, "" when there is none.
func (c *SpikeClassifier) garbageBefore(step int64) string {
	for i := len(c.garbage) - 1; i >= 0; i-- {
		n := c.garbage[i]
		if n.step <= step && step-n.step <= int64(c.cfg.SpikeLookback) {
			return fmt.Sprintf("step %d, %s", n.step, n.what)
		}
	}
	return ""
}
