// Package ngram hashes word n-grams for the data filters and the
// decontamination index: given one 64-bit hash per word, Rolling returns one
// hash per n-gram in O(1) each.
package ngram

// base is the odd multiplier of the polynomial rolling hash.
const base uint64 = 0x9e3779b97f4a7c15

// Rolling appends to dst, for every j, a hash of words j..j+k-1: the
// polynomial Σ h[j+i]·base^(k-1-i) mod 2^64 of the word hashes h, updated
// in O(1) per step. It appends nothing when len(h) < k.
func Rolling(dst, h []uint64, k int) []uint64 {
	if k <= 0 || len(h) < k {
		return dst
	}
	var x, top uint64 = 0, 1 // top = base^(k-1)
	for i := 0; i < k; i++ {
		x = x*base + h[i]
		if i > 0 {
			top *= base
		}
	}
	dst = append(dst, x)
	for j := k; j < len(h); j++ {
		x = (x-h[j-k]*top)*base + h[j]
		dst = append(dst, x)
	}
	return dst
}
