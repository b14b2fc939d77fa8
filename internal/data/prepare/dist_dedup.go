package prepare

import (
	"cmp"
	"fmt"
	"slices"
	"unsafe"

	"github.com/kestrel-lm/kestrel/internal/comm"
	"github.com/kestrel-lm/kestrel/internal/data/datareport"
	"github.com/kestrel-lm/kestrel/internal/data/dedup"
)

// A document of a distributed run is referred to by its unit and its
// position among the unit's survivors of the clean stage.
func docRef(u, k int) int64 { return int64(u)<<32 | int64(k) }

func refUnit(ref int64) int { return int(ref >> 32) }

// exactRec is one document's exact-dedup hash, sent to the hash's owner.
type exactRec struct {
	H   uint64
	Ref int64
	ID  string
}

// dupRec tells a unit's rank that Ref repeats the text of First.
type dupRec struct {
	Ref   int64
	First string
}

// exchange sends send[r] to rank r (gob-encoded) and returns what every
// rank sent to this one, in rank order.
func exchange[T any](c comm.Comm, phase string, send [][]T) ([]T, int, error) {
	bufs := make([][]byte, c.Size())
	for r := range bufs {
		b, err := gobBytes(send[r])
		if err != nil {
			return nil, 0, fmt.Errorf("prepare: %s: %w", phase, err)
		}
		bufs[r] = b
	}
	recv, err := c.AllToAllBytes(bufs)
	if err != nil {
		return nil, 0, fmt.Errorf("prepare: %s: %w", phase, err)
	}
	var out []T
	n := 0
	for r, b := range recv {
		n += len(b)
		var part []T
		if err := unGob(b, &part); err != nil {
			return nil, 0, fmt.Errorf("prepare: %s: from rank %d: %w", phase, r, err)
		}
		out = append(out, part...)
	}
	return out, n, nil
}

// exact decides exact duplicates: every hash goes to its owner rank, which
// keeps the first occurrence in the global order (unit, position) and
// tells the ranks of the others. It returns ref → id of the first copy for
// this rank's duplicates.
func (w *distWork) exact() (map[int64]string, error) {
	if w.p.exact == nil {
		return nil, nil
	}
	t := startClock()
	size := w.c.Size()
	send := make([][]exactRec, size)
	for _, i := range w.mine {
		m := w.metas[i]
		for k, h := range m.Hashes {
			r := dedup.Owner(h, size)
			send[r] = append(send[r], exactRec{H: h, Ref: docRef(i, k), ID: m.IDs[k]})
		}
	}
	all, _, err := exchange(w.c, "exact dedup hashes", send)
	if err != nil {
		return nil, err
	}
	for _, e := range all {
		w.stats.ExactIndexBytes += int64(8 + 8 + 16 + len(e.ID))
	}
	slices.SortFunc(all, func(a, b exactRec) int {
		if c := cmp.Compare(a.H, b.H); c != 0 {
			return c
		}
		return cmp.Compare(a.Ref, b.Ref)
	})
	back := make([][]dupRec, size)
	for i := 0; i < len(all); {
		j := i + 1
		for j < len(all) && all[j].H == all[i].H {
			r := w.owner[refUnit(all[j].Ref)]
			back[r] = append(back[r], dupRec{Ref: all[j].Ref, First: all[i].ID})
			j++
		}
		i = j
	}
	got, _, err := exchange(w.c, "exact dedup decisions", back)
	if err != nil {
		return nil, err
	}
	dups := make(map[int64]string, len(got))
	for _, d := range got {
		dups[d.Ref] = d.First
	}
	w.record("exact_exchange", t)
	return dups, nil
}

// refID is a document's id, sent to rank 0 for near-dup clusters.
type refID struct {
	Ref int64
	ID  string
}

// dropRec tells a unit's rank that Ref is a near duplicate of Kept.
type dropRec struct {
	Ref  int64
	Kept string
}

// near decides near duplicates among the exact survivors: their band keys
// (computed in phase 1) go to their owner ranks, which turn shared buckets
// into edges; rank 0 merges the edges with union-find, asks the owners for
// the ids of the documents in clusters (the kept document of a cluster is
// its smallest id, as in one process) and tells each rank which of its
// documents to drop. It returns this rank's drops (ref → kept
// id), the hotspots (on every rank) and, on rank 0, the number of clusters.
func (w *distWork) near(dups map[int64]string) (map[int64]string, []datareport.Hotspot, int, error) {
	p := w.p
	if p.near == nil {
		return nil, nil, 0, nil
	}
	t := startClock()
	size := w.c.Size()
	bands := p.near.n.Bands()
	send := make([][]dedup.BandEntry, size)
	for _, i := range w.mine {
		m := w.metas[i]
		for k := range m.IDs {
			if _, dup := dups[docRef(i, k)]; dup || m.Empty[k] {
				continue
			}
			for b, key := range m.Keys[k*bands : (k+1)*bands] {
				r := dedup.Owner(key, size)
				send[r] = append(send[r], dedup.BandEntry{Key: key, Band: int32(b), Ref: docRef(i, k)})
			}
		}
	}
	entries, _, err := exchange(w.c, "near dedup band keys", send)
	if err != nil {
		return nil, nil, 0, err
	}
	send = nil
	w.stats.NearIndexBytes = int64(len(entries)) * int64(unsafe.Sizeof(dedup.BandEntry{}))
	edges := dedup.BucketEdges(entries)
	entries = nil
	eb, err := gobBytes(edges)
	if err != nil {
		return nil, nil, 0, err
	}
	gathered, err := w.c.GatherBytes(eb, 0)
	if err != nil {
		return nil, nil, 0, fmt.Errorf("prepare: gather near-dup edges: %w", err)
	}
	// Rank 0 merges the edges into components and asks the owners of
	// their documents for the ids (the kept document is the smallest id).
	var comps [][]int64
	ask := make([][]int64, size)
	if w.c.Rank() == 0 {
		var all []dedup.Edge
		for r, b := range gathered {
			var part []dedup.Edge
			if err := unGob(b, &part); err != nil {
				return nil, nil, 0, fmt.Errorf("prepare: near-dup edges from rank %d: %w", r, err)
			}
			all = append(all, part...)
		}
		comps = dedup.Components(all)
		for _, g := range comps {
			for _, ref := range g {
				r := w.owner[refUnit(ref)]
				ask[r] = append(ask[r], ref)
			}
		}
	}
	asked, _, err := exchange(w.c, "near dedup member ids (ask)", ask)
	if err != nil {
		return nil, nil, 0, err
	}
	answer := make([][]refID, size)
	for _, ref := range asked {
		u, k := refUnit(ref), int(ref&(1<<32-1))
		m := w.metas[u]
		if m == nil || k >= len(m.IDs) {
			return nil, nil, 0, fmt.Errorf("prepare: near dedup: rank 0 asked for document %d of unit %d, which this rank does not hold", k, u)
		}
		answer[0] = append(answer[0], refID{ref, m.IDs[k]})
	}
	named, _, err := exchange(w.c, "near dedup member ids (answer)", answer)
	if err != nil {
		return nil, nil, 0, err
	}
	back := make([][]dropRec, size)
	var hot []datareport.Hotspot
	nClusters := 0
	if w.c.Rank() == 0 {
		ids := make(map[int64]string, len(named))
		for _, n := range named {
			ids[n.Ref] = n.ID
		}
		cl := dedup.ClustersOf(comps, func(r int64) string { return ids[r] })
		nClusters = len(cl)
		clusters := make([]Cluster, len(cl))
		for ci, c := range cl {
			clusters[ci] = Cluster{Kept: c.Kept, Members: c.Members}
			for j := 1; j < len(c.Refs); j++ {
				r := w.owner[refUnit(c.Refs[j])]
				back[r] = append(back[r], dropRec{Ref: c.Refs[j], Kept: c.Kept})
			}
		}
		hot = p.hotspots(clusters)
	}
	got, _, err := exchange(w.c, "near dedup decisions", back)
	if err != nil {
		return nil, nil, 0, err
	}
	drops := make(map[int64]string, len(got))
	for _, d := range got {
		drops[d.Ref] = d.Kept
	}
	hb, err := gobBytes(hot)
	if err != nil {
		return nil, nil, 0, err
	}
	if hb, err = w.c.BcastBytes(hb, 0); err != nil {
		return nil, nil, 0, fmt.Errorf("prepare: broadcast hotspots: %w", err)
	}
	hot = nil
	if err := unGob(hb, &hot); err != nil {
		return nil, nil, 0, fmt.Errorf("prepare: hotspots: %w", err)
	}
	w.record("near_exchange_clusters", t)
	return drops, hot, nClusters, nil
}
