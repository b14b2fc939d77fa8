package train

import (
	"math"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/datasrc"
)

// TestTokenEntropy: uniform over k tokens is ln k; one repeated token is 0
// and still measured; padding (< 0) is not counted; reset forgets.
func TestTokenEntropy(t *testing.T) {
	var e tokenEntropy
	e.reset(256)
	e.add([]int32{1, 2, 3, 4, -1, -1})
	if got := e.nats(); math.Abs(got-math.Log(4)) > 1e-12 || e.n != 4 {
		t.Errorf("4 distinct: %v nats over %d tokens", got, e.n)
	}
	e.reset(256)
	e.add([]int32{7, 7, 7})
	if e.nats() != 0 || e.n != 3 {
		t.Errorf("repeated: %v over %d", e.nats(), e.n)
	}
	e.reset(256)
	if e.n != 0 || e.nats() != 0 {
		t.Error("reset kept counts")
	}
}

// BenchmarkTokenEntropy is the per-step cost of batch_token_entropy on a
// demo-sized batch (16 × 256 tokens of a vocabulary of 8192).
func BenchmarkTokenEntropy(b *testing.B) {
	tg := make([]int32, 16*256)
	for i := range tg {
		tg[i] = int32(datasrc.Mix3(1, uint64(i), 0) % 8192)
	}
	var e tokenEntropy
	for b.Loop() {
		e.reset(8192)
		e.add(tg)
		_ = e.nats()
	}
}
