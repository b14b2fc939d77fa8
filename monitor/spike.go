package monitor

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// Spike verdicts: the leaves of seed 000's spike flowchart.
const (
	VerdictRecoverable  = "recoverable"
	VerdictArtifact     = "logging artifact"
	VerdictDataEvent    = "data event"
	VerdictStructural   = "structural instability / new worse plateau"
	VerdictUndetermined = "undetermined (no eval after the spike)"
)

// Spike is one detected loss spike and, once decided, its verdict.
type Spike struct {
	Step      int64
	Loss      float64 // train_loss_raw at the spike
	Median    float64 // pre-spike window median
	Sigma     float64 // pre-spike robust standard deviation
	Z         float64
	BandHi    float64 // upper edge of the pre-spike band
	Precursor string  // "update_norm", "update_to_weight", "grad_global_norm" or "" when no norm spiked first
	Lead      int     // steps by which Precursor preceded the loss (0 = same step)
	// LayerPrecursor is the per-layer update norm (e.g. "update_norm/layer0")
	// that jumped first within the lookback, "" when none did; LayerLead
	// and LayerRise are its lead in steps and its value ÷ its window median
	// then; LayersJumped counts the layers whose update norm jumped.
	LayerPrecursor string
	LayerLead      int
	LayerRise      float64
	LayersJumped   int
	Batch          *Batch // the spike step's batch, when the trainer described it
	// DataShift says, when it is not "", that the spike's batch came mostly
	// from a source the run had hardly trained on in the window before
	// (e.g. "garbage: 100% of the batch, 0% of the 64 steps before"): a
	// data event even when the loss recovers.
	DataShift string
	// GarbageBatch cites the batch checks when a batch within
	// spike_lookback steps before the spike (or the spike's own) was
	// outside the run's band: "garbage_batch at step 120: …" (batchrules.go).
	GarbageBatch string

	Verdict   string
	DecidedAt int64
	ValBefore float64
	ValAfter  float64
	NormsHigh bool
	TailLoss  float64

	preNorm map[string][2]float64 // name -> (median, sigma) before the spike
	tail    map[string][]float64  // values in the follow-up window
	loss    []float64
}

// PrecursorText is the sentence the alert carries about norm precursors:
// the global norm that spiked first and the layer whose update norm jumped
// first.
func (s *Spike) PrecursorText() string {
	t := s.globalPrecursorText()
	if s.LayerPrecursor == "" {
		return t
	}
	when := "at the same step as the loss"
	if s.LayerLead > 0 {
		when = fmt.Sprintf("%d step%s before the loss", s.LayerLead, map[bool]string{true: "", false: "s"}[s.LayerLead == 1])
	}
	rise := "jumped"
	if finite(s.LayerRise) && s.LayerRise > 0 {
		rise = fmt.Sprintf("rose ×%.3g", s.LayerRise)
	}
	t += fmt.Sprintf("; %s %s at step %d, %s", s.LayerPrecursor, rise, s.Step-int64(s.LayerLead), when)
	if s.LayersJumped > 1 {
		t += fmt.Sprintf(" (%d layers' update norms jumped)", s.LayersJumped)
	}
	return t
}

func (s *Spike) globalPrecursorText() string {
	if s.Precursor == "" {
		if s.LayerPrecursor != "" {
			return "no global grad/update-norm spike preceded it"
		}
		return "no grad/update-norm spike preceded it"
	}
	name := map[string]string{"update_norm": "update norm", "update_to_weight": "update norm (update_to_weight)", "grad_global_norm": "grad norm"}[s.Precursor]
	if name == "" {
		name = s.Precursor
	}
	if s.Lead == 0 {
		return name + " spiked at the same step as the loss"
	}
	unit := "steps"
	if s.Lead == 1 {
		unit = "step"
	}
	return fmt.Sprintf("%s preceded loss by %d %s", name, s.Lead, unit)
}

// classifierNorms are the norms watched as spike precursors, in report
// order of preference. update_to_weight (lr·‖Δ‖/‖θ‖) carries the LR, so it
// sees an LR spike that the direction norm update_norm does not.
var classifierNorms = []string{"update_norm", "update_to_weight", "grad_global_norm"}

// layerNormPrefix marks the per-layer update norms (update_norm/layer3,
// update_norm/embed, update_norm/lm_head) watched as precursors: in Marin's
// runs a lower layer's update norm jumped before the loss did.
const layerNormPrefix = "update_norm/"

// classifierInputs picks from a sample's values what SpikeClassifier.Step
// watches: the classifier norms and the per-layer update norms.
func classifierInputs(values map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for _, n := range classifierNorms {
		if v, ok := values[n]; ok {
			out[n] = v
		}
	}
	for k, v := range values {
		if strings.HasPrefix(k, layerNormPrefix) {
			out[k] = v
		}
	}
	for _, n := range []string{"learning_rate", "lr_cycle", "lr_scale"} { // planned re-warm-ups (gaprules.go)
		if v, ok := values[n]; ok {
			out[n] = v
		}
	}
	return out
}

// SpikeClassifier detects loss spikes by robust z-score over a rolling
// window and, after a follow-up window, classifies each one by the seed-000
// flowchart. It is fed one step at a time and by evaluations.
type SpikeClassifier struct {
	cfg      Config
	loss     *ring
	norms    map[string]*ring
	normZ    map[string][]stepZ // recent z-scores per norm (last lookback+1 steps)
	layers   map[string]*ring   // per-layer update norms, by full name
	layerZ   map[string][]stepZ // their recent z-scores
	pending  []*Spike
	inSpike  bool
	bandHi   float64
	vals     []stepVal // evaluations seen (step, val_loss)
	lastStep int64
	// recentSrc holds the batch sources of the last Window steps (oldest
	// first), for the data-shift test of a spike's batch.
	recentSrc [][]string
	// garbage holds the recent batches the batch checks found outside the
	// band (oldest first), for GarbageBatch.
	garbage []garbageNote
	// plan holds the planned changes of the loss's level (gaprules.go).
	plan plannedState
}

type stepZ struct {
	step int64
	z    float64
	rise float64 // value ÷ window median
}

type stepVal struct {
	step int64
	v    float64
}

// NewSpikeClassifier returns a classifier using cfg's spike_* and norm_z
// settings.
func NewSpikeClassifier(cfg Config) *SpikeClassifier {
	c := &SpikeClassifier{cfg: cfg, loss: newRing(cfg.Window), norms: map[string]*ring{}, normZ: map[string][]stepZ{},
		layers: map[string]*ring{}, layerZ: map[string][]stepZ{}}
	for _, n := range classifierNorms {
		c.norms[n] = newRing(cfg.Window)
	}
	return c
}

// Eval records a validation loss measured at step.
func (c *SpikeClassifier) Eval(step int64, valLoss float64) {
	if finite(valLoss) {
		c.vals = append(c.vals, stepVal{step, valLoss})
	}
}

// Step feeds one step: its loss, its norms (missing ones are NaN; the
// per-layer update norms under their full names, see classifierInputs) and
// its batch. It returns a newly detected spike (or nil) and the spikes
// whose verdict was decided at this step.
func (c *SpikeClassifier) Step(step int64, loss float64, norms map[string]float64, batch *Batch) (detected *Spike, decided []*Spike) {
	c.lastStep = step
	c.plannedChange(step, norms) // a data stage or a re-warm-up re-bases the loss window (gaprules.go)
	c.observeNorms(step, norms)
	if !finite(loss) {
		return nil, c.decide(step)
	}
	for _, s := range c.pending {
		s.loss = append(s.loss, loss)
	}
	if c.inSpike && loss <= c.bandHi {
		c.inSpike = false
	}
	if !c.inSpike && c.loss.len() >= minWindow(c.cfg) {
		detected = c.detect(step, loss, batch)
	}
	// The spike's own loss stays out of the baseline window only while the
	// episode lasts, so a spike does not widen the band it is judged by.
	if !c.inSpike {
		c.loss.push(loss)
	}
	if batch != nil && len(batch.Sources) > 0 {
		c.recentSrc = append(c.recentSrc, batch.Sources)
		if len(c.recentSrc) > c.cfg.Window {
			c.recentSrc = c.recentSrc[1:]
		}
	}
	return detected, c.decide(step)
}

// observeNorms scores a step's norms against their windows before this
// step (the global norms, then each layer's update norm against its own
// window) and adds them to the windows and the pending spikes' tails.
func (c *SpikeClassifier) observeNorms(step int64, norms map[string]float64) {
	for _, n := range classifierNorms {
		v, ok := norms[n]
		if !ok || !finite(v) {
			continue
		}
		r := c.norms[n]
		if r.len() >= minWindow(c.cfg) {
			med, sig := robust(r.values())
			c.normZ[n] = c.pushZ(c.normZ[n], stepZ{step, robustZ(v, med, sig), v / med})
		}
		r.push(v)
		for _, s := range c.pending {
			if s.tail != nil {
				s.tail[n] = append(s.tail[n], v)
			}
		}
	}
	for n, v := range norms {
		if !strings.HasPrefix(n, layerNormPrefix) || !finite(v) {
			continue
		}
		r := c.layers[n]
		if r == nil {
			r = newRing(c.cfg.Window)
			c.layers[n] = r
		}
		if r.len() >= minWindow(c.cfg) {
			med, sig := robust(r.values())
			c.layerZ[n] = c.pushZ(c.layerZ[n], stepZ{step, robustZ(v, med, sig), v / med})
		}
		r.push(v)
	}
}

// detect judges loss against the loss window and, when it is a spike,
// opens its episode (precursors, data shift, the batch before it) and
// returns it; nil otherwise.
func (c *SpikeClassifier) detect(step int64, loss float64, batch *Batch) *Spike {
	med, sig := robust(c.loss.values())
	z := robustZ(loss, med, sig)
	if !(z > c.cfg.SpikeZ && loss > med*(1+c.cfg.SpikeMinRise)) {
		return nil
	}
	s := &Spike{Step: step, Loss: loss, Median: med, Sigma: sig, Z: z, Batch: batch,
		BandHi:  med + math.Max(3*sig, 0.5*c.cfg.SpikeMinRise*math.Abs(med)),
		preNorm: map[string][2]float64{}, tail: map[string][]float64{}, ValBefore: math.NaN(), ValAfter: math.NaN(), TailLoss: math.NaN()}
	s.Precursor, s.Lead = c.precursor(step)
	s.DataShift = c.dataShift(batch)
	s.GarbageBatch = c.garbageBefore(step)
	s.LayerPrecursor, s.LayerLead, s.LayerRise, s.LayersJumped = c.layerPrecursor(step)
	for n, r := range c.norms {
		if r.len() > 0 {
			m, sg := robust(r.values())
			s.preNorm[n] = [2]float64{m, sg}
		}
	}
	if v, ok := c.valBefore(step); ok {
		s.ValBefore = v
	}
	c.pending = append(c.pending, s)
	c.inSpike, c.bandHi = true, s.BandHi
	return s
}

// dataShift reports a batch dominated (half its rows or more) by a source
// that made up under a tenth of the rows of the window's batches before it.
func (c *SpikeClassifier) dataShift(b *Batch) string {
	if b == nil || len(b.Sources) == 0 || len(c.recentSrc) < minWindow(c.cfg) {
		return ""
	}
	now := map[string]int{}
	for _, src := range b.Sources {
		now[src]++
	}
	top, n := "", 0
	for src, k := range now {
		if k > n || k == n && src < top {
			top, n = src, k
		}
	}
	shareNow := float64(n) / float64(len(b.Sources))
	before, total := 0, 0
	for _, srcs := range c.recentSrc {
		for _, src := range srcs {
			total++
			if src == top {
				before++
			}
		}
	}
	shareBefore := float64(before) / float64(total)
	if shareNow < 0.5 || shareBefore >= 0.1 {
		return ""
	}
	return fmt.Sprintf("%s: %.0f%% of the batch, %.0f%% of the %d steps before", top, 100*shareNow, 100*shareBefore, len(c.recentSrc))
}

func minWindow(cfg Config) int { return max(8, cfg.Window/2) }

// pushZ appends z to zs, keeping the last lookback+1 entries.
func (c *SpikeClassifier) pushZ(zs []stepZ, z stepZ) []stepZ {
	zs = append(zs, z)
	if len(zs) > c.cfg.SpikeLookback+1 {
		zs = zs[len(zs)-c.cfg.SpikeLookback-1:]
	}
	return zs
}

// firstJump is the earliest entry of zs above the norm_z threshold within
// lookback steps up to step.
func (c *SpikeClassifier) firstJump(zs []stepZ, step int64) (stepZ, bool) {
	for _, sz := range zs {
		if sz.step > step || step-sz.step > int64(c.cfg.SpikeLookback) || sz.z <= c.cfg.NormZ {
			continue
		}
		return sz, true // normZ is in step order
	}
	return stepZ{}, false
}

// layerPrecursor finds the per-layer update norm that jumped first within
// lookback steps up to step (ties: the larger rise, then the name) and
// counts the layers that jumped.
func (c *SpikeClassifier) layerPrecursor(step int64) (name string, lead int, rise float64, jumped int) {
	names := make([]string, 0, len(c.layerZ))
	for n := range c.layerZ {
		names = append(names, n)
	}
	sort.Strings(names)
	lead = -1
	for _, n := range names {
		sz, ok := c.firstJump(c.layerZ[n], step)
		if !ok {
			continue
		}
		jumped++
		if l := int(step - sz.step); l > lead || (l == lead && sz.rise > rise) {
			name, lead, rise = n, l, sz.rise
		}
	}
	if lead < 0 {
		return "", 0, 0, 0
	}
	return name, lead, rise, jumped
}

// precursor finds the earliest norm spike within lookback steps up to step.
func (c *SpikeClassifier) precursor(step int64) (string, int) {
	best, lead := "", -1
	for _, n := range classifierNorms {
		if sz, ok := c.firstJump(c.normZ[n], step); ok {
			if l := int(step - sz.step); l > lead {
				best, lead = n, l
			}
		}
	}
	if lead < 0 {
		return "", 0
	}
	return best, lead
}

// valBefore is the last evaluation strictly before step (an evaluation at
// the spike step itself already saw that step's update).
func (c *SpikeClassifier) valBefore(step int64) (float64, bool) {
	for i := len(c.vals) - 1; i >= 0; i-- {
		if c.vals[i].step < step {
			return c.vals[i].v, true
		}
	}
	return 0, false
}

// valAfter is the latest evaluation at or after step.
func (c *SpikeClassifier) valAfter(step int64) (float64, bool) {
	for i := len(c.vals) - 1; i >= 0; i-- {
		if c.vals[i].step >= step {
			return c.vals[i].v, true
		}
	}
	return 0, false
}

// decide gives verdicts to spikes whose follow-up window has passed.
func (c *SpikeClassifier) decide(step int64) []*Spike {
	var out []*Spike
	keep := c.pending[:0]
	for _, s := range c.pending {
		if step-s.Step < int64(c.cfg.SpikeFollow) {
			keep = append(keep, s)
			continue
		}
		if s.classify(c, step) {
			out = append(out, s)
		} else {
			keep = append(keep, s)
		}
	}
	c.pending = keep
	return out
}

// forget drops the spikes detected in a seeded history: they were judged
// when they happened; only the windows are kept.
func (c *SpikeClassifier) forget() {
	c.pending, c.inSpike, c.bandHi = nil, false, 0
}

// Flush decides every pending spike with what is known now (end of a log).
func (c *SpikeClassifier) Flush() []*Spike {
	var out []*Spike
	for _, s := range c.pending {
		if len(s.loss) < 4 {
			continue
		}
		s.classify(c, -1)
		out = append(out, s)
	}
	c.pending = nil
	return out
}

func tailMedian(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	n := max(3, len(xs)/4)
	if n > len(xs) {
		n = len(xs)
	}
	return median(append([]float64(nil), xs[len(xs)-n:]...))
}

// classify walks the flowchart; it returns false when it must wait longer
// for an evaluation. step < 0 forces a decision.
func (s *Spike) classify(c *SpikeClassifier, step int64) bool {
	s.TailLoss = tailMedian(s.loss)
	decidedAt := step
	if step < 0 {
		decidedAt = c.lastStep
	}
	s.NormsHigh = false
	for n, pre := range s.preNorm {
		t := tailMedian(s.tail[n])
		if finite(t) && t-pre[0] > math.Max(3*pre[1], 0.5*math.Abs(pre[0])) {
			s.NormsHigh = true
		}
	}
	if s.TailLoss <= s.BandHi {
		// Recovered. A batch from data the run had not been seeing, with no
		// norm spiking before the loss (a gradient spike at the same step is
		// the bad batch's own), is still a data event: the loss came back
		// because the bad data stopped, and that data is worth a look.
		s.Verdict, s.DecidedAt = VerdictRecoverable, decidedAt
		if s.DataShift != "" && (s.Precursor == "" || s.Lead == 0) {
			s.Verdict = VerdictDataEvent
		}
		return true
	}
	va, ok := c.valAfter(s.Step)
	if !ok {
		if step >= 0 && step-s.Step < 4*int64(c.cfg.SpikeFollow) {
			return false
		}
		s.Verdict, s.DecidedAt = VerdictUndetermined, decidedAt
		return true
	}
	s.ValAfter = va
	switch {
	case !finite(s.ValBefore):
		s.Verdict = VerdictUndetermined
	case va-s.ValBefore <= c.cfg.ValShift:
		s.Verdict = VerdictArtifact
	case !s.NormsHigh:
		s.Verdict = VerdictDataEvent
	default:
		s.Verdict = VerdictStructural
	}
	s.DecidedAt = decidedAt
	return true
}

// Summary is the one-line description of a decided spike.
func (s *Spike) Summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "loss spike at step %d (%.4g vs median %.4g, z=%.1f): %s; %s", s.Step, s.Loss, s.Median, s.Z, s.Verdict, s.PrecursorText())
	if finite(s.TailLoss) {
		fmt.Fprintf(&b, "; loss after %d steps %.4g (band ≤ %.4g)", len(s.loss), s.TailLoss, s.BandHi)
	}
	if finite(s.ValBefore) && finite(s.ValAfter) {
		fmt.Fprintf(&b, "; val_loss %.4g → %.4g", s.ValBefore, s.ValAfter)
	}
	if s.DataShift != "" {
		b.WriteString("; data shift: " + s.DataShift)
	}
	if s.GarbageBatch != "" {
		b.WriteString("; it follows a garbage batch: " + s.GarbageBatch)
	}
	if s.Verdict == VerdictStructural || s.Verdict == VerdictDataEvent {
		if s.NormsHigh {
			b.WriteString("; norms stayed elevated")
		} else {
			b.WriteString("; norms back to normal")
		}
	}
	if s.Verdict == VerdictDataEvent && s.Batch != nil {
		fmt.Fprintf(&b, "; batch sources %s, docs %s", listHead(s.Batch.Sources, 8), listHead(s.Batch.DocIDs, 8))
	}
	return b.String()
}

func listHead(xs []string, n int) string {
	if len(xs) == 0 {
		return "[]"
	}
	uniq := []string{}
	seen := map[string]bool{}
	for _, x := range xs {
		if !seen[x] {
			seen[x] = true
			uniq = append(uniq, x)
		}
	}
	more := ""
	if len(uniq) > n {
		more = fmt.Sprintf(" …+%d", len(uniq)-n)
		uniq = uniq[:n]
	}
	return "[" + strings.Join(uniq, ",") + more + "]"
}
