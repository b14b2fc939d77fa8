package model

import (
	"math/rand/v2"
	"testing"
)

// TestRandomBatch: tokens within the vocabulary; segment ids only with
// doc_mask, numbered as the data loader numbers packed documents (from 0,
// never decreasing, at most one step at a time), with documents of about
// BenchDocLen tokens.
func TestRandomBatch(t *testing.T) {
	c := Config{Vocab: 50, SeqLen: 256}
	b := RandomBatch(c, 8, rand.New(rand.NewPCG(1, 2)))
	if b.B != 8 || b.T != 256 || len(b.Inputs) != 8*256 || len(b.Targets) != 8*256 || b.SegIDs != nil {
		t.Fatalf("without doc_mask: B %d T %d, %d inputs, %d targets, seg ids %v", b.B, b.T, len(b.Inputs), len(b.Targets), b.SegIDs != nil)
	}
	for i, v := range b.Inputs {
		if v < 0 || v >= 50 || b.Targets[i] < 0 || b.Targets[i] >= 50 {
			t.Fatalf("position %d: input %d, target %d outside the vocabulary", i, v, b.Targets[i])
		}
	}
	c.DocMask = true
	b = RandomBatch(c, 8, rand.New(rand.NewPCG(1, 2)))
	if len(b.SegIDs) != 8*256 {
		t.Fatalf("with doc_mask: %d segment ids, want %d", len(b.SegIDs), 8*256)
	}
	docs := 0
	for s := 0; s < 8; s++ {
		seg := b.SegIDs[s*256 : (s+1)*256]
		if seg[0] != 0 {
			t.Fatalf("sequence %d starts in document %d", s, seg[0])
		}
		for i := 1; i < len(seg); i++ {
			if d := seg[i] - seg[i-1]; d < 0 || d > 1 {
				t.Fatalf("sequence %d: segment id %d after %d", s, seg[i], seg[i-1])
			}
		}
		docs += int(seg[255]) + 1
	}
	if mean := float64(8*256) / float64(docs); mean < BenchDocLen/2 || mean > 2*BenchDocLen {
		t.Errorf("mean document length %.0f tokens, want about %d", mean, BenchDocLen)
	}
}
