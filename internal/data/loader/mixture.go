package loader

import (
	"fmt"
	"sort"

	"github.com/kestrel-lm/kestrel/internal/batchsched"
)

// mixStage is one mixture in force from firstSeq on.
type mixStage struct {
	startStep int
	firstSeq  int64     // global sequence index where the stage starts
	weights   []float64 // normalised
	counts    []int     // positions per block, per source (sum = K)
	cum       []int     // cum[s] = Σ counts[<s]
	owner     []int32   // owner[pos] = the source whose range holds block position pos
	base      []int64   // sequences of each source drawn before this stage
}

// mixture maps a global sequence index to (source, source-local sequence
// number) by Levanter-style block-wise mixing.
type mixture struct {
	k      int
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

func newMixture(k int, seed uint64, spec PermSpec, stages []mixStage, sched batchsched.Schedule) (*mixture, error) {
	m := &mixture{k: k, seed: seed, spec: spec, stages: stages}
	ns := len(stages[0].weights)
	for i := range m.stages {
		st := &m.stages[i]
		st.firstSeq = sched.FirstSeq(st.startStep)
		st.counts = blockCounts(st.weights, k)
		st.cum = make([]int, ns)
		for s := 1; s < ns; s++ {
			st.cum[s] = st.cum[s-1] + st.counts[s-1]
		}
		st.owner = make([]int32, 0, k)
		for s, c := range st.counts {
			for ; c > 0; c-- {
				st.owner = append(st.owner, int32(s))
			}
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
	if len(c.src) != m.k {
		c.src = make([]int32, m.k)
		c.rank = make([]int32, m.k)
	}
	if len(c.cnt) != ns {
		c.cnt = make([]int32, ns)
	}
	clear(c.cnt)
	p, err := NewPermutation(m.spec, int64(m.k), DeriveKey(m.seed, "mix-block", uint64(stage), uint64(block)))
	if err != nil {
		return fmt.Errorf("mixing block %d of stage %d: %w", block, stage, err)
	}
	for o := 0; o < m.k; o++ {
		s := st.owner[p.Index(int64(o))]
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
	block, o := local/int64(m.k), int(local%int64(m.k))
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
	full, rem := local/int64(m.k), int(local%int64(m.k))
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
