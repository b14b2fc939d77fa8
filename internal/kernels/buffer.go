package kernels

// hugePageMin is the smallest buffer (floats) MakeBuffer backs with huge
// pages: below two huge pages the advice has nothing to cover.
const hugePageMin = 1 << 20

// MakeBuffer returns a zeroed []float32 of length n for a large, long-lived
// operand (an activation arena, parameters, gradients, optimizer moments).
// On Linux buffers of 4 MiB and more are advised onto transparent huge
// pages before they are first written: the GEMMs walk such buffers at row
// strides of several KiB, and with 4 KiB pages every row of a packed block
// is a different TLB entry (the lm_head's weight gradient, which reads 14
// rows 32 KiB apart per step, ran ~10–20% faster on huge pages).
func MakeBuffer(n int) []float32 {
	b := make([]float32, n)
	if n >= hugePageMin {
		adviseHugePages(b)
	}
	return b
}
