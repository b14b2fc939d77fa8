package dedup

import (
	"cmp"
	"encoding/binary"
	"slices"

	"github.com/zeebo/xxh3"
)

// This file holds the pieces of exact and near dedup that a job of several
// processes partitions by value: every process hashes its own documents,
// the hash (or LSH band key) decides which process owns it, and the owner
// decides. The decisions are those of Exact (first occurrence kept) and
// Near.Finish without verify (connected components of shared buckets, the
// smallest id kept).

// Owner returns the process, of size processes, that owns hash h (an
// exact-dedup hash or a band key; both are xxh3 outputs, so the low bits
// are uniform).
func Owner(h uint64, size int) int { return int(h % uint64(size)) }

// Verifies reports whether the near-dup configuration checks candidates by
// exact Jaccard (then the decision depends on the order buckets are
// visited and cannot be partitioned by band key).
func (n *Near) Verifies() bool { return n.cfg.Verify }

// Bands returns the number of LSH bands.
func (n *Near) Bands() int { return n.cfg.NumBands }

// BandKeys appends to dst the LSH band keys of text (one per band, in band
// order: the xxh3 of the band's MinHash rows, little-endian, seeded by the
// band number, as Finish buckets them). It returns false, and no keys, when
// the text has no words (Finish leaves such documents out).
func (n *Near) BandKeys(text string, dst []uint64) ([]uint64, bool) {
	sc := n.pool.Get().(*addScratch)
	defer n.pool.Put(sc)
	sig, ok := n.signature(text, sc.sig, sc, nil)
	sc.sig = sig
	if !ok {
		return dst, false
	}
	var kb [4 * 1024]byte
	r := n.cfg.Rows
	for band := 0; band < n.cfg.NumBands; band++ {
		k := kb[:0]
		for _, v := range sig[band*r : (band+1)*r] {
			k = binary.LittleEndian.AppendUint32(k, v)
		}
		dst = append(dst, xxh3.HashSeed(k, uint64(band)))
	}
	return dst, true
}

// BandEntry is one document in one LSH bucket: Ref is the caller's
// document reference (unique per document).
type BandEntry struct {
	Key  uint64
	Band int32
	Ref  int64
}

// Edge joins two documents that share a bucket.
type Edge struct{ A, B int64 }

// BucketEdges sorts entries by (band, key, ref) and returns, for every
// bucket of two or more documents, an edge from its first document to each
// other one (each pair once, sorted): the same connected components as
// Finish's unions.
func BucketEdges(entries []BandEntry) []Edge {
	slices.SortFunc(entries, func(x, y BandEntry) int {
		if c := cmp.Compare(x.Band, y.Band); c != 0 {
			return c
		}
		if c := cmp.Compare(x.Key, y.Key); c != 0 {
			return c
		}
		return cmp.Compare(x.Ref, y.Ref)
	})
	var out []Edge
	for i := 0; i < len(entries); {
		j := i + 1
		for j < len(entries) && entries[j].Band == entries[i].Band && entries[j].Key == entries[i].Key {
			j++
		}
		for m := i + 1; m < j; m++ {
			if entries[m].Ref != entries[i].Ref {
				out = append(out, Edge{A: entries[i].Ref, B: entries[m].Ref})
			}
		}
		i = j
	}
	// A pair that shares several bands needs one edge.
	slices.SortFunc(out, func(x, y Edge) int {
		if c := cmp.Compare(x.A, y.A); c != 0 {
			return c
		}
		return cmp.Compare(x.B, y.B)
	})
	return slices.Compact(out)
}

// Components merges edges with union-find and returns the connected
// components (two or more documents each) as sorted references, sorted by
// their first reference.
func Components(edges []Edge) [][]int64 {
	idx := map[int64]int32{}
	var refs []int64
	var parent []int32
	node := func(ref int64) int32 {
		if i, ok := idx[ref]; ok {
			return i
		}
		i := int32(len(refs))
		idx[ref] = i
		refs = append(refs, ref)
		parent = append(parent, i)
		return i
	}
	find := func(x int32) int32 {
		for parent[x] != x {
			parent[x] = parent[parent[x]]
			x = parent[x]
		}
		return x
	}
	for _, e := range edges {
		ra, rb := find(node(e.A)), find(node(e.B))
		if ra != rb {
			parent[max(ra, rb)] = min(ra, rb)
		}
	}
	groups := map[int32][]int64{}
	for i, r := range refs {
		root := find(int32(i))
		groups[root] = append(groups[root], r)
	}
	out := make([][]int64, 0, len(groups))
	for _, g := range groups {
		if len(g) > 1 {
			slices.Sort(g)
			out = append(out, g)
		}
	}
	slices.SortFunc(out, func(x, y []int64) int { return cmp.Compare(x[0], y[0]) })
	return out
}

// RefCluster is a near-duplicate cluster: Kept is the smallest id, Members
// all ids sorted (Kept first) and Refs their references in the same order.
type RefCluster struct {
	Kept    string
	Members []string
	Refs    []int64
}

// ClustersOf names the components with the documents' ids (id(ref)) and
// returns them as Finish does: the kept document of each is its smallest
// id, members sorted by id, clusters sorted by Kept.
func ClustersOf(comps [][]int64, id func(int64) string) []RefCluster {
	out := make([]RefCluster, 0, len(comps))
	for _, g := range comps {
		type m struct {
			id  string
			ref int64
		}
		ms := make([]m, len(g))
		for i, r := range g {
			ms[i] = m{id(r), r}
		}
		slices.SortFunc(ms, func(x, y m) int {
			if c := cmp.Compare(x.id, y.id); c != 0 {
				return c
			}
			return cmp.Compare(x.ref, y.ref)
		})
		c := RefCluster{Kept: ms[0].id}
		for _, x := range ms {
			c.Members = append(c.Members, x.id)
			c.Refs = append(c.Refs, x.ref)
		}
		out = append(out, c)
	}
	slices.SortFunc(out, func(x, y RefCluster) int { return cmp.Compare(x.Kept, y.Kept) })
	return out
}
