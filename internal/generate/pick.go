package generate

import (
	"cmp"
	"container/heap"
	"math"
	"math/rand/v2"
	"slices"
)

// PickToken samples from softmax(logits/temperature) after top-k and top-p
// truncation; temperature 0 returns the argmax (the first on ties). It is
// Picker.Pick with fresh scratch.
func PickToken(logits []float32, temperature float64, topK int, topP float64, rng *rand.Rand) int32 {
	var p Picker
	return p.Pick(logits, temperature, topK, topP, rng)
}

// Picker samples tokens as PickToken does, keeping its scratch between
// calls so that a sampling loop allocates nothing per token. The zero value
// is ready; a Picker is not safe for concurrent use.
type Picker struct {
	idx  []int
	p    []float64
	heap candHeap
}

// Pick samples from softmax(logits/temperature) after top-k and top-p
// truncation; temperature 0 returns the argmax (the first on ties).
// Candidates are ranked by logit, ties by lower token id; the k best are
// found with a size-k heap (O(V log k)) rather than a sort of the whole
// vocabulary, then the nucleus is cut from their probabilities in that
// order and one is drawn.
func (pk *Picker) Pick(logits []float32, temperature float64, topK int, topP float64, rng *rand.Rand) int32 {
	best := 0
	for i, v := range logits {
		if v > logits[best] {
			best = i
		}
	}
	if temperature == 0 {
		return int32(best)
	}
	idx := pk.ranked(logits, topK)
	if cap(pk.p) < len(idx) {
		pk.p = make([]float64, len(idx))
	}
	p := pk.p[:len(idx)]
	var z float64
	mx := float64(logits[idx[0]])
	for i, j := range idx {
		p[i] = math.Exp((float64(logits[j]) - mx) / temperature)
		z += p[i]
	}
	cum := 0.0
	for i := range p {
		p[i] /= z
		cum += p[i]
		if cum >= topP {
			p, idx = p[:i+1], idx[:i+1]
			break
		}
	}
	z = 0
	for _, v := range p {
		z += v
	}
	r := rng.Float64() * z
	for i, v := range p {
		r -= v
		if r <= 0 {
			return int32(idx[i])
		}
	}
	return int32(idx[len(idx)-1])
}

// ranked returns the token ids in rank order (logit descending, ties by
// lower id), only the first topK when 0 < topK < len(logits).
func (pk *Picker) ranked(logits []float32, topK int) []int {
	order := func(a, b int) int {
		if c := cmp.Compare(logits[b], logits[a]); c != 0 {
			return c
		}
		return a - b
	}
	if topK <= 0 || topK >= len(logits) {
		if cap(pk.idx) < len(logits) {
			pk.idx = make([]int, len(logits))
		}
		idx := pk.idx[:len(logits)]
		for i := range idx {
			idx[i] = i
		}
		slices.SortFunc(idx, order)
		return idx
	}
	// keep the topK best in a heap whose root is the worst of them
	h := &pk.heap
	h.logits, h.ids = logits, h.ids[:0]
	for i := range topK {
		h.ids = append(h.ids, i)
	}
	heap.Init(h)
	for i := topK; i < len(logits); i++ {
		if order(i, h.ids[0]) < 0 {
			h.ids[0] = i
			heap.Fix(h, 0)
		}
	}
	slices.SortFunc(h.ids, order)
	return h.ids
}

// candHeap is a heap of token ids whose root is the lowest-ranked one.
type candHeap struct {
	logits []float32
	ids    []int
}

func (h *candHeap) Len() int { return len(h.ids) }
func (h *candHeap) Less(a, b int) bool {
	x, y := h.ids[a], h.ids[b]
	if h.logits[x] != h.logits[y] {
		return h.logits[x] < h.logits[y]
	}
	return x > y
}
func (h *candHeap) Swap(a, b int) { h.ids[a], h.ids[b] = h.ids[b], h.ids[a] }
func (h *candHeap) Push(x any)    { h.ids = append(h.ids, x.(int)) }
func (h *candHeap) Pop() any {
	x := h.ids[len(h.ids)-1]
	h.ids = h.ids[:len(h.ids)-1]
	return x
}
