package model

import "math/rand/v2"

// BenchDocLen is the mean document length, in tokens, of RandomBatch's
// documents: sequences then hold a few documents each, as packed training
// data of short documents does.
const BenchDocLen = 96

// RandomBatch is a batch of B sequences of random tokens for benchmarks
// (inputs and targets drawn uniformly from the vocabulary by r). When c has
// doc_mask on, it carries segment ids too, as the data loader numbers
// packed documents: from 0 in each sequence, one more at each document
// start, documents of random length (geometric, mean BenchDocLen), so that
// a benchmark pays for the document mask as training on real data does.
func RandomBatch(c Config, B int, r *rand.Rand) *Batch {
	T := c.SeqLen
	b := &Batch{B: B, T: T, Inputs: make([]int32, B*T), Targets: make([]int32, B*T)}
	for i := range b.Inputs {
		b.Inputs[i] = int32(r.IntN(c.Vocab))
		b.Targets[i] = int32(r.IntN(c.Vocab))
	}
	if !c.DocMask {
		return b
	}
	b.SegIDs = make([]int32, B*T)
	for s := 0; s < B; s++ {
		id := int32(0)
		for t := 1; t < T; t++ {
			if r.IntN(BenchDocLen) == 0 {
				id++
			}
			b.SegIDs[s*T+t] = id
		}
	}
	return b
}
