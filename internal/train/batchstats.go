package train

import "math"

// tokenEntropy accumulates the unigram histogram of a batch's target
// tokens for batch_token_entropy, with a count array reused across steps
// (only the touched entries are reset).
type tokenEntropy struct {
	counts  []int32
	touched []int32
	n       int
}

func (e *tokenEntropy) reset(vocab int) {
	if len(e.counts) != vocab {
		e.counts = make([]int32, vocab)
	}
	for _, t := range e.touched {
		e.counts[t] = 0
	}
	e.touched, e.n = e.touched[:0], 0
}

// add counts the targets ≥ 0 (positions with a loss).
func (e *tokenEntropy) add(tg []int32) {
	for _, t := range tg {
		if t < 0 || int(t) >= len(e.counts) {
			continue
		}
		if e.counts[t] == 0 {
			e.touched = append(e.touched, t)
		}
		e.counts[t]++
		e.n++
	}
}

// nats is the entropy of the histogram, 0 when it is empty.
func (e *tokenEntropy) nats() float64 {
	if e.n == 0 {
		return 0
	}
	n := float64(e.n)
	var h float64
	for _, t := range e.touched {
		p := float64(e.counts[t]) / n
		h -= p * math.Log(p)
	}
	return h
}
