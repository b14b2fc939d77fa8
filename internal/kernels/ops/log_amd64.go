package ops

import (
	"math"

	"golang.org/x/sys/cpu"
)

// log8AVX512 sets out[i] = math.Log(x[i]) for finite x[i] > 0, bit for
// bit: math.Log's amd64 assembly on 8 lanes (log_amd64.s).
//
//go:noescape
func log8AVX512(x, out *[8]float64)

// useLogAVX512 selects log8AVX512 (tests switch it off to compare).
var useLogAVX512 = cpu.X86.HasAVX512F && cpu.X86.HasAVX512DQ

// log8 sets out[i] = math.Log(x[i]) for i < 8, bit for bit, eight at a
// time where the CPU has AVX-512 (each entry that is not finite and > 0
// through math.Log itself).
func log8(x, out *[8]float64) {
	if !useLogAVX512 {
		log8Go(x, out)
		return
	}
	log8AVX512(x, out)
	for i, v := range x {
		if !(v > 0 && v <= math.MaxFloat64) {
			out[i] = math.Log(v)
		}
	}
}
