package generate

import (
	"math"
	"math/rand/v2"
	"sort"
)

// PickToken samples from softmax(logits/temperature) after top-k and top-p
// truncation; temperature 0 returns the argmax (the first on ties).
func PickToken(logits []float32, temperature float64, topK int, topP float64, rng *rand.Rand) int32 {
	best := 0
	for i, v := range logits {
		if v > logits[best] {
			best = i
		}
	}
	if temperature == 0 {
		return int32(best)
	}
	idx := make([]int, len(logits))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return logits[idx[a]] > logits[idx[b]] })
	if topK > 0 && topK < len(idx) {
		idx = idx[:topK]
	}
	p := make([]float64, len(idx))
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
