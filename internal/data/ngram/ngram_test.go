package ngram

import (
	"math/rand/v2"
	"testing"
)

// Rolling must equal hashing each window from scratch, and equal windows
// must hash equally wherever they occur.
func TestRollingMatchesDirect(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, tc := range []struct{ n, k int }{{0, 1}, {1, 1}, {5, 5}, {4, 5}, {40, 13}, {100, 1}, {100, 7}} {
		h := make([]uint64, tc.n)
		for i := range h {
			h[i] = rng.Uint64() % 5 // few distinct words: repeated windows
		}
		got := Rolling(nil, h, tc.k)
		want := max(0, tc.n-tc.k+1)
		if len(got) != want {
			t.Fatalf("n=%d k=%d: %d hashes, want %d", tc.n, tc.k, len(got), want)
		}
		for j := range got {
			var x uint64
			for i := 0; i < tc.k; i++ {
				x = x*base + h[j+i]
			}
			if got[j] != x {
				t.Fatalf("n=%d k=%d: window %d hash %x, direct %x", tc.n, tc.k, j, got[j], x)
			}
		}
	}
	if got := Rolling([]uint64{9}, []uint64{1, 2}, 0); len(got) != 1 {
		t.Fatalf("k=0 must append nothing: %v", got)
	}
}
