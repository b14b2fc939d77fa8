package loader

import (
	"fmt"
	"math"
)

// DominanceThreshold is the share above which one block "dominates" a batch.
const DominanceThreshold = 0.5

// Composition measures how i.i.d. batches are with respect to a labelling of
// the data (by source, or by block of the data in its stored order: on data
// sorted by topic a block is a topic).
type Composition struct {
	Label  string      // what is being measured, e.g. "feistel" or "lcg stride 7"
	Steps  int         // batches measured
	Labels int         // number of distinct labels (blocks)
	Shares [][]float64 // [step][label] share of the batch's rows
	Global []float64   // share of each label over all measured batches
	// ACF[k] is the autocorrelation at lag k of the per-step label shares,
	// pooled over labels (Σ_b cov_b(k) / Σ_b var_b). ~0 for i.i.d. batches;
	// near 1 when consecutive batches look alike (phases).
	ACF []float64
	// MaxRun is the longest run of consecutive batches in which the same
	// label holds ≥ DominanceThreshold of the rows; RunLabel is that label
	// and RunStart its first step (-1 when no batch is dominated).
	MaxRun, RunLabel, RunStart int
	// MeanMaxShare is the mean over batches of the largest label share.
	MeanMaxShare float64
	// MeanTV is the mean total-variation distance between a batch's
	// composition and Global.
	MeanTV float64
}

// Lag1 is ACF[1].
func (c *Composition) Lag1() float64 {
	if len(c.ACF) < 2 {
		return 0
	}
	return c.ACF[1]
}

// Compose builds a Composition from per-step label lists. labels(step)
// returns the label of every row of the step's batch, each in [0, nLabels).
// expected, when not nil, gives each label's expected share at a step (the
// mixture weights in force): the autocorrelation then measures deviations
// from it, so a planned change of the mixture (a data stage) is not
// mistaken for drifting batches. With nil the expectation is each label's
// mean over all steps.
func Compose(name string, steps, nLabels, maxLag int, labels func(step int) ([]int, error), expected func(step int) []float64) (*Composition, error) {
	if steps < 2 || nLabels < 1 {
		return nil, fmt.Errorf("composition: need ≥ 2 steps and ≥ 1 label (got %d, %d)", steps, nLabels)
	}
	c := &Composition{Label: name, Steps: steps, Labels: nLabels, Global: make([]float64, nLabels), RunLabel: -1, RunStart: -1}
	rows := 0
	for s := 0; s < steps; s++ {
		ls, err := labels(s)
		if err != nil {
			return nil, err
		}
		sh := make([]float64, nLabels)
		for _, b := range ls {
			if b < 0 || b >= nLabels {
				return nil, fmt.Errorf("composition: step %d: label %d outside [0,%d)", s, b, nLabels)
			}
			sh[b]++
			c.Global[b]++
		}
		rows += len(ls)
		for b := range sh {
			sh[b] /= float64(len(ls))
		}
		c.Shares = append(c.Shares, sh)
	}
	for b := range c.Global {
		c.Global[b] /= float64(rows)
	}
	// pooled autocorrelation
	if maxLag >= steps {
		maxLag = steps - 1
	}
	c.ACF = make([]float64, maxLag+1)
	var den float64
	num := make([]float64, maxLag+1)
	dev := make([]float64, steps)
	for b := 0; b < nLabels; b++ {
		mu := 0.0
		for s := 0; s < steps; s++ {
			mu += c.Shares[s][b]
		}
		mu /= float64(steps)
		for s := 0; s < steps; s++ {
			dev[s] = c.Shares[s][b] - mu
			if expected != nil {
				dev[s] = c.Shares[s][b] - expected(s)[b]
			}
		}
		for s, d := range dev {
			den += d * d
			for k := 0; k <= maxLag && s+k < steps; k++ {
				num[k] += d * dev[s+k]
			}
		}
	}
	for k := range c.ACF {
		if den > 0 {
			c.ACF[k] = num[k] / den
		}
	}
	// dominance runs, max share, TV distance
	run, runLabel := 0, -1
	for s, sh := range c.Shares {
		top, topB, tv := 0.0, -1, 0.0
		for b, x := range sh {
			if x > top {
				top, topB = x, b
			}
			tv += math.Abs(x - c.Global[b])
		}
		c.MeanMaxShare += top
		c.MeanTV += tv / 2
		if top >= DominanceThreshold {
			if topB == runLabel {
				run++
			} else {
				run, runLabel = 1, topB
			}
			if run > c.MaxRun {
				c.MaxRun, c.RunLabel, c.RunStart = run, runLabel, s-run+1
			}
		} else {
			run, runLabel = 0, -1
		}
	}
	c.MeanMaxShare /= float64(steps)
	c.MeanTV /= float64(steps)
	return c, nil
}

// Synthetic is block-structured data for the shuffle report: items
// 0 … Items-1 stored sorted by topic, Blocks equal contiguous topics. A
// batch of Batch consecutive positions of the shuffled order is drawn per
// step; an item's label is its topic.
type Synthetic struct {
	Items  int64
	Blocks int
	Batch  int
	Seed   uint64
}

// Composition measures the synthetic data under spec's permutation (with
// epoch re-keying, exactly as the loader orders a source's sequences).
func (sy Synthetic) Composition(spec PermSpec, steps, maxLag int) (*Composition, error) {
	if sy.Items < int64(sy.Blocks) || sy.Blocks < 1 || sy.Batch < 1 {
		return nil, fmt.Errorf("synthetic: need items ≥ blocks ≥ 1 and batch ≥ 1 (items %d, blocks %d, batch %d)", sy.Items, sy.Blocks, sy.Batch)
	}
	var cur Permutation
	curEpoch := int64(-1)
	name := spec.Kind
	if spec.Kind == PermFeistel && spec.Round == RoundMix {
		name = "feistel-mix"
	}
	labels := func(step int) ([]int, error) {
		out := make([]int, sy.Batch)
		for r := range out {
			g := int64(step)*int64(sy.Batch) + int64(r)
			e := g / sy.Items
			if e != curEpoch {
				p, err := NewPermutation(spec, sy.Items, DeriveKey(sy.Seed, "order/synthetic", uint64(e)))
				if err != nil {
					return nil, err
				}
				cur, curEpoch = p, e
			}
			item := cur.Index(g % sy.Items)
			out[r] = int(item * int64(sy.Blocks) / sy.Items)
		}
		return out, nil
	}
	if spec.Kind == PermLCG {
		p, err := NewLCG(sy.Items, DeriveKey(sy.Seed, "order/synthetic", 0), spec.LCGStride)
		if err != nil {
			return nil, err
		}
		name = fmt.Sprintf("lcg stride %d", p.Stride())
	}
	return Compose(name, steps, sy.Blocks, maxLag, labels, nil)
}

// Composition measures the loader's own batches for steps [0, steps):
// with blocks = 0 a row's label is its source; with blocks > 0 it is the
// (source, block) of its slot, where each source's slots are cut into
// blocks equal ranges in stored order (topics, if the data was sorted).
func (l *Loader) Composition(name string, steps, blocks, maxLag int) (*Composition, []string, error) {
	n := len(l.names)
	var names []string
	if blocks <= 0 {
		names = l.SourceNames()
	} else {
		for _, s := range l.names {
			for b := 0; b < blocks; b++ {
				names = append(names, fmt.Sprintf("%s/%d", s, b))
			}
		}
		n *= blocks
	}
	var c cursor
	labels := func(step int) ([]int, error) {
		g0, b := l.sched.FirstSeq(step), l.sched.At(step)
		out := make([]int, b)
		for r := range out {
			ref, err := l.ref(&c, g0+int64(r))
			if err != nil {
				return nil, fmt.Errorf("step %d row %d: %w", step, r, err)
			}
			out[r] = ref.src
			if blocks > 0 {
				out[r] = ref.src*blocks + int(ref.slot*int64(blocks)/l.slots[ref.src])
			}
		}
		return out, nil
	}
	// Expected shares: the block-mixing counts of the stage in force at the
	// step's first sequence, split evenly over a source's blocks.
	expected := func(step int) []float64 {
		st := &l.mix.stages[l.mix.stageOf(l.sched.FirstSeq(step))]
		out := make([]float64, n)
		for s, cnt := range st.counts {
			share := float64(cnt) / float64(st.k)
			if blocks <= 0 {
				out[s] = share
				continue
			}
			for b := 0; b < blocks; b++ {
				out[s*blocks+b] = share / float64(blocks)
			}
		}
		return out
	}
	comp, err := Compose(name, steps, n, maxLag, labels, expected)
	return comp, names, err
}
