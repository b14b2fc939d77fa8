package dedup

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestPartitionedNearMatchesFinish: band keys partitioned over 1–4 owners,
// bucket edges per owner and union-find over all edges give Finish's
// clusters and dropped documents.
func TestPartitionedNearMatchesFinish(t *testing.T) {
	base := paragraphs(t, 40, 60)
	rng := rand.New(rand.NewPCG(7, 8))
	var ids, docs []string
	for i, p := range base {
		ids = append(ids, fmt.Sprintf("d%04d", (i*7919)%10000))
		docs = append(docs, p)
		if i%5 == 0 { // near copies, some of them chained
			ids = append(ids, fmt.Sprintf("c%04d", i))
			docs = append(docs, edit(p, 0.02, false, rng))
			ids = append(ids, fmt.Sprintf("a%04d", i))
			docs = append(docs, edit(docs[len(docs)-1], 0.02, false, rng))
		}
	}
	ids = append(ids, "empty")
	docs = append(docs, " ,. ")
	n, err := NewNear(DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	for i := range docs {
		n.Add(ids[i], docs[i])
	}
	want, err := n.Finish()
	if err != nil {
		t.Fatal(err)
	}
	if len(want.Clusters) < 5 {
		t.Fatalf("only %d clusters planted", len(want.Clusters))
	}
	for _, owners := range []int{1, 2, 3, 4} {
		parts := make([][]BandEntry, owners)
		for i := range docs {
			keys, ok := n.BandKeys(docs[i], nil)
			if ok != (ids[i] != "empty") || (ok && len(keys) != n.Bands()) {
				t.Fatalf("%s: %d keys, ok %v", ids[i], len(keys), ok)
			}
			for b, k := range keys {
				o := Owner(k, owners)
				parts[o] = append(parts[o], BandEntry{Key: k, Band: int32(b), Ref: int64(i)})
			}
		}
		var edges []Edge
		for _, p := range parts {
			edges = append(edges, BucketEdges(p)...)
		}
		got := ClustersOf(Components(edges), func(r int64) string { return ids[r] })
		if len(got) != len(want.Clusters) {
			t.Fatalf("%d owners: %d clusters, want %d", owners, len(got), len(want.Clusters))
		}
		dropped := 0
		for i, c := range got {
			w := want.Clusters[i]
			if c.Kept != w.Kept || !slices.Equal(c.Members, w.Members) {
				t.Errorf("%d owners: cluster %d = %s %v, want %s %v", owners, i, c.Kept, c.Members, w.Kept, w.Members)
			}
			for j, ref := range c.Refs {
				if ids[ref] != c.Members[j] {
					t.Errorf("%d owners: ref %d is %s, member says %s", owners, ref, ids[ref], c.Members[j])
				}
			}
			dropped += len(c.Members) - 1
		}
		if dropped != len(want.Dropped) {
			t.Errorf("%d owners: %d dropped, want %d", owners, dropped, len(want.Dropped))
		}
	}
}
