package dedup

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"sync"

	"github.com/zeebo/xxh3"
)

// Config is the near-duplicate (MinHash-LSH) configuration.
type Config struct {
	NumBands   int     `toml:"num_bands" comment:"LSH bands; two documents are candidates when all rows of any band agree"`
	Rows       int     `toml:"rows" comment:"MinHash values per band (num_bands × rows hashes in all)"`
	NGram      int     `toml:"ngram" comment:"shingle size in words of the normalised text"`
	Threshold  float64 `toml:"threshold" comment:"with verify: minimum exact Jaccard similarity of shingle sets for candidates to join a cluster"`
	Verify     bool    `toml:"verify" comment:"check candidates by exact Jaccard of their shingle sets (stores 8 bytes per distinct shingle per document)"`
	Seed       uint64  `toml:"seed" comment:"seed of the MinHash permutations"`
	MaxCompare int     `toml:"max_compare" comment:"with verify: a bucket member is compared with at most this many earlier members"`
}

// DefaultConfig returns DataTrove's FineWeb setting: 14 bands × 8 rows =
// 112 hashes over word 5-grams, no verification. The S-curve's midpoint is
// near Jaccard (1/14)^(1/8) ≈ 0.72.
func DefaultConfig() Config {
	return Config{NumBands: 14, Rows: 8, NGram: 5, Threshold: 0.7, Seed: 1, MaxCompare: 16}
}

func (c Config) validate() error {
	switch {
	case c.NumBands < 1:
		return fmt.Errorf("num_bands = %d: must be >= 1", c.NumBands)
	case c.Rows < 1:
		return fmt.Errorf("rows = %d: must be >= 1", c.Rows)
	case c.NumBands*c.Rows > 1024:
		return fmt.Errorf("num_bands × rows = %d: at most 1024 hashes", c.NumBands*c.Rows)
	case c.NGram < 1:
		return fmt.Errorf("ngram = %d: must be >= 1", c.NGram)
	case c.Verify && (c.Threshold <= 0 || c.Threshold > 1 || math.IsNaN(c.Threshold)):
		return fmt.Errorf("threshold = %v: must be in (0, 1] with verify", c.Threshold)
	case c.Verify && c.MaxCompare < 1:
		return fmt.Errorf("max_compare = %d: must be >= 1 with verify", c.MaxCompare)
	}
	return nil
}

// Near accumulates MinHash signatures and clusters near-duplicates in
// Finish. Memory per document: 4·num_bands·rows bytes of signature (448
// for the default) plus the id string (16-byte header + its bytes) and,
// with verify, 8 bytes per distinct shingle plus a 24-byte slice header.
// Texts are not kept. Add is safe for concurrent use.
type Near struct {
	cfg  Config
	k    int
	a, b []uint64 // multiply-shift permutation parameters (a odd)
	pool sync.Pool

	mu       sync.Mutex
	sigs     []uint32 // k per document, in Add order
	ids      []string
	empty    []bool
	shingles [][]uint64 // verify only: sorted distinct shingle hashes
	idBytes  int
	shBytes  int
}

// NewNear validates cfg and returns an empty index.
func NewNear(cfg Config) (*Near, error) {
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("dedup config: %w", err)
	}
	k := cfg.NumBands * cfg.Rows
	n := &Near{cfg: cfg, k: k, a: make([]uint64, k), b: make([]uint64, k)}
	s := cfg.Seed ^ 0x6a09e667f3bcc909
	for i := 0; i < k; i++ {
		n.a[i] = splitmix(&s) | 1
		n.b[i] = splitmix(&s)
	}
	n.pool.New = func() any { return &addScratch{} }
	return n, nil
}

func splitmix(s *uint64) uint64 {
	*s += 0x9e3779b97f4a7c15
	z := *s
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

type addScratch struct {
	norm   []byte
	starts []int32
	ends   []int32
	sig    []uint32
	sh     []uint64
}

// signature computes the MinHash signature of text into dst (length
// num_bands·rows, reused when large enough) and, when shingles is non-nil,
// appends the shingle hashes to *shingles. Each word n-gram of the
// normalised text is hashed once with xxh3; the k MinHash values are the
// minima over shingles of the multiply-shift permutations
// h_i(x) = (a_i·x + b_i) >> 32 (a_i odd), which cost one multiply each.
// It reports false when the text has no words.
func (n *Near) signature(text string, dst []uint32, sc *addScratch, shingles *[]uint64) ([]uint32, bool) {
	sc.norm = AppendNormalized(sc.norm[:0], text)
	sc.starts, sc.ends = sc.starts[:0], sc.ends[:0]
	norm := sc.norm
	in := false
	for i, c := range norm {
		if c == ' ' {
			if in {
				sc.ends = append(sc.ends, int32(i))
				in = false
			}
		} else if !in {
			sc.starts = append(sc.starts, int32(i))
			in = true
		}
	}
	if in {
		sc.ends = append(sc.ends, int32(len(norm)))
	}
	if cap(dst) < n.k {
		dst = make([]uint32, n.k)
	}
	dst = dst[:n.k]
	for i := range dst {
		dst[i] = math.MaxUint32
	}
	nw := len(sc.starts)
	if nw == 0 {
		return dst, false
	}
	g := n.cfg.NGram
	if nw < g {
		g = nw
	}
	sh := sc.sh[:0]
	for i := 0; i+g <= nw; i++ {
		sh = append(sh, xxh3.Hash(norm[sc.starts[i]:sc.ends[i+g-1]]))
	}
	sc.sh = sh
	if shingles != nil {
		*shingles = append(*shingles, sh...)
	}
	a, b := n.a[:len(dst)], n.b[:len(dst)]
	// Four shingles per pass over the permutations: the parameters and the
	// running minima are loaded once per four multiplies.
	i := 0
	for ; i+4 <= len(sh); i += 4 {
		x0, x1, x2, x3 := sh[i], sh[i+1], sh[i+2], sh[i+3]
		for j := range dst {
			aj, bj := a[j], b[j]
			v := min(uint32((aj*x0+bj)>>32), uint32((aj*x1+bj)>>32), uint32((aj*x2+bj)>>32), uint32((aj*x3+bj)>>32))
			dst[j] = min(dst[j], v)
		}
	}
	for ; i < len(sh); i++ {
		x := sh[i]
		for j := range dst {
			dst[j] = min(dst[j], uint32((a[j]*x+b[j])>>32))
		}
	}
	return dst, true
}

// Add computes text's signature and records it under id. Ids should be
// unique: the kept document of a cluster is chosen by id.
func (n *Near) Add(id, text string) {
	sc := n.pool.Get().(*addScratch)
	var sh []uint64
	var shp *[]uint64
	if n.cfg.Verify {
		shp = &sh
	}
	sig, ok := n.signature(text, sc.sig, sc, shp)
	sc.sig = sig
	if shp != nil {
		slices.Sort(sh)
		sh = slices.Clip(slices.Compact(sh))
	}
	n.mu.Lock()
	n.sigs = append(n.sigs, sig...)
	n.ids = append(n.ids, id)
	n.empty = append(n.empty, !ok)
	n.idBytes += len(id)
	if n.cfg.Verify {
		n.shingles = append(n.shingles, sh)
		n.shBytes += 8*len(sh) + 24
	}
	n.mu.Unlock()
	n.pool.Put(sc)
}

// Docs returns the number of documents added.
func (n *Near) Docs() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.ids)
}

// BytesPerDoc returns the index's memory per document so far: the
// signature (4·num_bands·rows), the id (16 + mean id length), the empty
// flag (1) and, with verify, the mean shingle-set size.
func (n *Near) BytesPerDoc() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	b := 4*n.k + 16 + 1
	if d := len(n.ids); d > 0 {
		b += (n.idBytes + n.shBytes) / d
	}
	return b
}

// Cluster is a set of near-duplicate documents; Kept is the one to keep
// (the smallest id in byte order) and Members lists all ids, Kept included,
// sorted.
type Cluster struct {
	Kept    string
	Members []string
}

// Result is the outcome of Finish.
type Result struct {
	Clusters []Cluster         // clusters of two or more documents, sorted by Kept
	Dropped  map[string]string // id of every dropped document → id of its cluster's kept document
	Docs     int               // documents added
}

// NearDupRate is the fraction of added documents that are dropped as near
// duplicates (0 when nothing was added).
func (r *Result) NearDupRate() float64 {
	if r.Docs == 0 {
		return 0
	}
	return float64(len(r.Dropped)) / float64(r.Docs)
}

// Largest returns up to k clusters, largest first (ties by Kept).
func (r *Result) Largest(k int) []Cluster {
	c := slices.Clone(r.Clusters)
	slices.SortStableFunc(c, func(x, y Cluster) int { return cmp.Compare(len(y.Members), len(x.Members)) })
	if len(c) > k {
		c = c[:k]
	}
	return c
}

// Finish buckets every signature band by band, joins documents that share
// a bucket (after exact-Jaccard verification when configured) with
// union-find and returns the clusters. The result depends only on the set
// of (id, text) added, not on the order or concurrency of Add: candidates
// are visited in id order. Finish does not consume the index.
func (n *Near) Finish() (*Result, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	d := len(n.ids)
	if d > math.MaxInt32 {
		return nil, fmt.Errorf("near dedup: %d documents exceed the index limit", d)
	}
	// rank[i]: position of doc i in id order (ties by signature then Add order).
	order := make([]int32, d)
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortStableFunc(order, func(x, y int32) int {
		if c := cmp.Compare(n.ids[x], n.ids[y]); c != 0 {
			return c
		}
		return slices.Compare(n.sigs[int(x)*n.k:int(x+1)*n.k], n.sigs[int(y)*n.k:int(y+1)*n.k])
	})
	parent := make([]int32, d) // union-find over ranks; root = smallest rank
	for i := range parent {
		parent[i] = int32(i)
	}
	find := func(x int32) int32 {
		for parent[x] != x {
			parent[x] = parent[parent[x]]
			x = parent[x]
		}
		return x
	}
	union := func(x, y int32) {
		rx, ry := find(x), find(y)
		if rx == ry {
			return
		}
		if rx < ry {
			parent[ry] = rx
		} else {
			parent[rx] = ry
		}
	}
	type entry struct {
		key  uint64
		rank int32
	}
	entries := make([]entry, 0, d)
	var kb []byte
	r := n.cfg.Rows
	for band := 0; band < n.cfg.NumBands; band++ {
		entries = entries[:0]
		for rank, doc := range order {
			if n.empty[doc] {
				continue
			}
			row := n.sigs[int(doc)*n.k+band*r : int(doc)*n.k+(band+1)*r]
			kb = kb[:0]
			for _, v := range row {
				kb = binary.LittleEndian.AppendUint32(kb, v)
			}
			entries = append(entries, entry{xxh3.HashSeed(kb, uint64(band)), int32(rank)})
		}
		slices.SortFunc(entries, func(x, y entry) int {
			if c := cmp.Compare(x.key, y.key); c != 0 {
				return c
			}
			return cmp.Compare(x.rank, y.rank)
		})
		for i := 0; i < len(entries); {
			j := i + 1
			for j < len(entries) && entries[j].key == entries[i].key {
				j++
			}
			for m := i + 1; m < j; m++ {
				if !n.cfg.Verify {
					union(entries[i].rank, entries[m].rank)
					continue
				}
				lo := max(i, m-n.cfg.MaxCompare)
				for p := lo; p < m; p++ {
					if find(entries[p].rank) == find(entries[m].rank) {
						break
					}
					if jaccard(n.shingles[order[entries[p].rank]], n.shingles[order[entries[m].rank]]) >= n.cfg.Threshold {
						union(entries[p].rank, entries[m].rank)
						break
					}
				}
			}
			i = j
		}
	}
	size := make([]int32, d)
	for rank := range order {
		size[find(int32(rank))]++
	}
	res := &Result{Dropped: map[string]string{}, Docs: d}
	at := map[int32]int{}     // root rank → index in res.Clusters
	for rank := range order { // ascending rank = id order, so the root comes first
		root := find(int32(rank))
		if size[root] < 2 {
			continue
		}
		id := n.ids[order[rank]]
		if int32(rank) == root {
			at[root] = len(res.Clusters)
			res.Clusters = append(res.Clusters, Cluster{Kept: id, Members: make([]string, 0, size[root])})
		}
		c := &res.Clusters[at[root]]
		c.Members = append(c.Members, id)
		if id != c.Kept || int32(rank) != root {
			res.Dropped[id] = c.Kept
		}
	}
	return res, nil
}

// jaccard returns |a∩b| / |a∪b| of two sorted distinct slices.
func jaccard(a, b []uint64) float64 {
	if len(a) == 0 && len(b) == 0 {
		return 1
	}
	i, j, inter := 0, 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] == b[j]:
			inter++
			i++
			j++
		case a[i] < b[j]:
			i++
		default:
			j++
		}
	}
	return float64(inter) / float64(len(a)+len(b)-inter)
}
