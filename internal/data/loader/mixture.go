package loader

import (
	"fmt"
	"sort"

	"github.com/kestrel-lm/kestrel/internal/batchsched"
)

// mixStage is one mixture in force from firstSeq on. A data stage without
// a ramp is one mixStage whose blocks hold data.mix_block sequences; a
// stage with ramp_steps = R > 1 is R−1 ramp mixStages, one per step of the
// ramp with the step's batch as its single block, then the stage proper
// from step start_step + R − 1 on.
type mixStage struct {
	startStep int
	firstSeq  int64     // global sequence index where the stage starts
	weights   []float64 // normalised (interpolated in a ramp step)
	k         int       // sequences per block: data.mix_block, or the ramp step's batch
	cfg       int       // the config stage: 0 = data.sources, i+1 = data.stages[i] (the block permutation's key)
	ramp      bool      // one step of a ramp: its counts come from rampCounts, its blocks key "mix-ramp"
	rampAt    float64   // in a ramp step, the ramp's progress (j+1)/ramp_steps (MixStage)
	counts    []int     // positions per block, per source (sum = k)
	cum       []int     // cum[s] = Σ counts[<s]
	owner     []int32   // owner[pos] = the source whose range holds block position pos (nil in a ramp step: built in table)
	base      []int64   // sequences of each source drawn before this stage
}

// mixture maps a global sequence index to (source, source-local sequence
// number) by Levanter-style block-wise mixing.
type mixture struct {
	seed   uint64
	spec   PermSpec
	stages []mixStage
}

// blockCache holds the owner table of one block; callers keep one per
// goroutine (it is not shared, so lookups need no lock).
type blockCache struct {
	stage int
	block int64
	src   []int32 // source of offset o
	rank  []int32 // rank of offset o among its source's offsets in the block
	cnt   []int32
	own   []int32 // scratch owner table of a ramp step
}

// blockCounts gives each source ⌊w·K⌋ positions and the remainder to the
// heaviest source (ties: the first).
func blockCounts(w []float64, k int) []int {
	c := make([]int, len(w))
	sum, heavy := 0, 0
	for s, x := range w {
		c[s] = int(x * float64(k))
		sum += c[s]
		if x > w[heavy] {
			heavy = s
		}
	}
	c[heavy] += k - sum
	return c
}

// newMixture lays out the stages (startStep, weights, k, cfg and ramp set
// by the caller; ramp steps without counts) on the batch schedule.
func newMixture(seed uint64, spec PermSpec, stages []mixStage, sched batchsched.Schedule) (*mixture, error) {
	m := &mixture{seed: seed, spec: spec, stages: stages}
	ns := len(stages[0].weights)
	var carry []float64 // a ramp's deficit per source, carried from step to step
	for i := range m.stages {
		st := &m.stages[i]
		st.firstSeq = sched.FirstSeq(st.startStep)
		if st.ramp {
			if carry == nil {
				carry = make([]float64, ns)
			}
			st.counts = rampCounts(st.weights, st.k, carry)
		} else {
			carry = nil
			st.counts = blockCounts(st.weights, st.k)
		}
		st.cum = make([]int, ns)
		for s := 1; s < ns; s++ {
			st.cum[s] = st.cum[s-1] + st.counts[s-1]
		}
		if !st.ramp {
			st.owner = ownerTable(st.counts, st.k, nil)
		}
		st.base = make([]int64, ns)
		if i > 0 {
			c, err := m.countBefore(st.firstSeq, i-1, nil)
			if err != nil {
				return nil, err
			}
			copy(st.base, c)
		}
	}
	return m, nil
}

// ownerTable lists, for each of the k block positions, the source whose
// range holds it (sources in order, counts[s] positions each); buf is
// reused when it has room.
func ownerTable(counts []int, k int, buf []int32) []int32 {
	own := buf[:0]
	if cap(own) < k {
		own = make([]int32, 0, k)
	}
	for s, c := range counts {
		for ; c > 0; c-- {
			own = append(own, int32(s))
		}
	}
	return own
}

// rampCounts splits one ramp step's b sequences among the sources so that
// the counts over the ramp so far follow the interpolated weights: each
// source is owed w·b plus what it was owed after the step before (carry,
// updated in place), gets the whole part of that (at least 0), and the
// sequences left over (or taken back, when a source owed nothing was
// over-served) go by the largest (smallest) remaining debt, ties to the
// first source. Every source's count over any run of ramp steps stays
// within about a sequence of Σ w·b.
func rampCounts(w []float64, b int, carry []float64) []int {
	c := make([]int, len(w))
	sum := 0
	for s, x := range w {
		carry[s] += x * float64(b)
		if carry[s] > 0 {
			c[s] = int(carry[s])
			sum += c[s]
		}
	}
	for ; sum < b; sum++ {
		best := 0
		for s := range c {
			if carry[s]-float64(c[s]) > carry[best]-float64(c[best]) {
				best = s
			}
		}
		c[best]++
	}
	for ; sum > b; sum-- {
		best := -1
		for s := range c {
			if c[s] > 0 && (best < 0 || carry[s]-float64(c[s]) < carry[best]-float64(c[best])) {
				best = s
			}
		}
		c[best]--
	}
	for s := range c {
		carry[s] -= float64(c[s])
	}
	return c
}

// stageOf is the stage in force at global sequence g.
func (m *mixture) stageOf(g int64) int {
	i := sort.Search(len(m.stages), func(i int) bool { return m.stages[i].firstSeq > g })
	return i - 1
}

// table fills c with the owner table of (stage, block).
func (m *mixture) table(c *blockCache, stage int, block int64) error {
	if c.src != nil && c.stage == stage && c.block == block {
		return nil
	}
	st := &m.stages[stage]
	ns := len(st.counts)
	if cap(c.src) < st.k {
		c.src = make([]int32, st.k)
		c.rank = make([]int32, st.k)
	}
	c.src, c.rank = c.src[:st.k], c.rank[:st.k]
	if len(c.cnt) != ns {
		c.cnt = make([]int32, ns)
	}
	clear(c.cnt)
	key := DeriveKey(m.seed, "mix-block", uint64(st.cfg), uint64(block))
	owner := st.owner
	if st.ramp {
		key = DeriveKey(m.seed, "mix-ramp", uint64(st.cfg), uint64(st.startStep))
		c.own = ownerTable(st.counts, st.k, c.own)
		owner = c.own
	}
	p, err := NewPermutation(m.spec, int64(st.k), key)
	if err != nil {
		return fmt.Errorf("mixing block %d of stage %d: %w", block, st.cfg, err)
	}
	for o := 0; o < st.k; o++ {
		s := owner[p.Index(int64(o))]
		c.src[o] = s
		c.rank[o] = c.cnt[s]
		c.cnt[s]++
	}
	c.stage, c.block = stage, block
	return nil
}

// locate maps global sequence g to its source and that source's sequence
// number j (counted over the whole run).
func (m *mixture) locate(c *blockCache, g int64) (src int, j int64, err error) {
	i := m.stageOf(g)
	st := &m.stages[i]
	local := g - st.firstSeq
	block, o := local/int64(st.k), int(local%int64(st.k))
	if err := m.table(c, i, block); err != nil {
		return 0, 0, err
	}
	s := int(c.src[o])
	return s, st.base[s] + block*int64(st.counts[s]) + int64(c.rank[o]), nil
}

// countBefore returns, per source, how many of the global sequences
// [0, g) it supplied, assuming g lies in stage i (or at its end).
func (m *mixture) countBefore(g int64, i int, c *blockCache) ([]int64, error) {
	if c == nil {
		c = &blockCache{}
	}
	st := &m.stages[i]
	out := append([]int64(nil), st.base...)
	local := g - st.firstSeq
	full, rem := local/int64(st.k), int(local%int64(st.k))
	for s := range out {
		out[s] += full * int64(st.counts[s])
	}
	if rem > 0 {
		if err := m.table(c, i, full); err != nil {
			return nil, err
		}
		for o := 0; o < rem; o++ {
			out[c.src[o]]++
		}
	}
	return out, nil
}

// seqsBefore is countBefore for any g; c (may be nil) caches block tables.
func (m *mixture) seqsBefore(g int64, c *blockCache) ([]int64, error) {
	return m.countBefore(g, m.stageOf(g), c)
}
