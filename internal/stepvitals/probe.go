package stepvitals

import "math"

// The probe batch's output vitals (logit_entropy_probe, topk_mass_probe)
// per row of logits.

// EntropyTopK returns the entropy (nats) of softmax(z) given its
// logsumexp, and the total probability of its len(top) largest entries
// (top is scratch).
func EntropyTopK(z []float32, lse float32, top []float32) (entropy, topMass float64) {
	for i := range top {
		top[i] = float32(math.Inf(-1))
	}
	var pz float64
	for _, v := range z {
		p := math.Exp(float64(v - lse))
		pz += p * float64(v)
		if v > top[len(top)-1] { // insert into the descending top list
			j := len(top) - 1
			for j > 0 && top[j-1] < v {
				top[j] = top[j-1]
				j--
			}
			top[j] = v
		}
	}
	for _, v := range top {
		if !math.IsInf(float64(v), -1) {
			topMass += math.Exp(float64(v - lse))
		}
	}
	return float64(lse) - pz, topMass
}
