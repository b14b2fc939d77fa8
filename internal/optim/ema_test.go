package optim

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestEMAUpdateBitIdentical: the EMA update (AVX-512 kernel where the CPU
// has it, the Go loop for the tail and elsewhere) gives the bits of the
// expression it replaced, float32(β·w + (1−β)·p), at odd lengths and on
// inputs with large and tiny magnitudes, both β of the configs.
func TestEMAUpdateBitIdentical(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, beta := range []float64{0.995, 0.9999} {
		for _, n := range []int{1, 7, 8, 9, 63, 64, 65, 1000, 1 << 16} {
			p := make([]float32, n)
			w0 := make([]float32, n)
			for i := range p {
				switch i % 5 {
				case 0:
					p[i], w0[i] = float32(rng.NormFloat64()), float32(rng.NormFloat64())
				case 1:
					p[i], w0[i] = float32(rng.NormFloat64()*1e30), float32(rng.NormFloat64()*1e-30)
				case 2:
					p[i], w0[i] = math.Float32frombits(rng.Uint32()&0x807fffff|0x3f000000), math.Float32frombits(rng.Uint32()&0x807fffff|0x3f800000)
				case 3:
					p[i], w0[i] = 0, float32(math.Copysign(1e-40, rng.NormFloat64())) // subnormal
				default:
					p[i], w0[i] = float32(i), -float32(i)
				}
			}
			want := make([]float32, n)
			for i := range want {
				want[i] = float32(beta*float64(w0[i]) + (1-beta)*float64(p[i])) // the code before the kernel
			}
			for _, asm := range []bool{false, true} {
				saved := useAVX512
				useAVX512 = useAVX512 && asm
				e := &EMA{Beta: beta, W: append([]float32(nil), w0...)}
				e.Update(p)
				useAVX512 = saved
				for i := range want {
					if math.Float32bits(e.W[i]) != math.Float32bits(want[i]) {
						t.Fatalf("β %v n %d asm %v: W[%d] = %v (%#x), want %v (%#x)", beta, n, asm, i, e.W[i], math.Float32bits(e.W[i]), want[i], math.Float32bits(want[i]))
					}
				}
			}
		}
	}
}

func BenchmarkEMAUpdate(b *testing.B) {
	p := make([]float32, 885888) // configs/shakespeare-char.toml
	for i := range p {
		p[i] = float32(i%97) * 0.01
	}
	for _, asm := range []bool{false, true} {
		name := "go"
		if asm {
			name = "avx512"
		}
		b.Run(name, func(b *testing.B) {
			saved := useAVX512
			useAVX512 = useAVX512 && asm
			defer func() { useAVX512 = saved }()
			e := NewEMA(0.995, p)
			for b.Loop() {
				e.Update(p)
			}
		})
	}
}
