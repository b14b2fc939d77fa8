package loader

import (
	"fmt"
	"testing"
)

// permLens covers the edge cases of the embedding: 1, 2, 3, primes, powers
// of two (even and odd bit counts), and 2^k ± 1.
var permLens = []int64{1, 2, 3, 4, 5, 7, 8, 13, 16, 17, 31, 32, 33, 63, 64, 65, 97, 127, 128, 129,
	255, 256, 257, 1000, 1023, 1024, 1025, 4093, 4096, 4097, 8191, 65535, 65536, 65537}

var permSpecs = []PermSpec{
	{Kind: PermFeistel},
	{Kind: PermFeistel, Rounds: 1},
	{Kind: PermFeistel, Rounds: 4},
	{Kind: PermFeistel, Round: RoundMix},
	{Kind: PermFeistel, Round: RoundMix, Rounds: 3},
	{Kind: PermLCG},
	{Kind: PermLCG, LCGStride: 7},
}

func checkBijection(t *testing.T, p Permutation) {
	t.Helper()
	n := p.Len()
	seen := make([]bool, n)
	for i := int64(0); i < n; i++ {
		y := p.Index(i)
		if y < 0 || y >= n {
			t.Fatalf("Index(%d) = %d outside [0,%d)", i, y, n)
		}
		if seen[y] {
			t.Fatalf("Index(%d) = %d already taken: not injective", i, y)
		}
		seen[y] = true
		if back := p.Inverse(y); back != i {
			t.Fatalf("Inverse(Index(%d)) = %d", i, back)
		}
	}
}

func TestPermutationBijection(t *testing.T) {
	for _, spec := range permSpecs {
		for _, n := range permLens {
			for seed := uint64(0); seed < 6; seed++ {
				key := DeriveKey(seed, "test", uint64(n))
				p, err := NewPermutation(spec, n, key)
				if err != nil {
					t.Fatal(err)
				}
				t.Run(fmt.Sprintf("%s%s-r%d-s%d/N=%d/seed=%d", spec.Kind, spec.Round, spec.Rounds, spec.LCGStride, n, seed), func(t *testing.T) {
					checkBijection(t, p)
				})
			}
		}
	}
}

// TestFeistelRoundsBijectiveOnBits checks exhaustively that the raw network
// (no cycle walking) permutes [0, 2^b) for every bit count 0..14, odd ones
// included, and every round count 1..6: the alternating-width construction.
func TestFeistelRoundsBijectiveOnBits(t *testing.T) {
	for b := uint(0); b <= 14; b++ {
		for rounds := 1; rounds <= 6; rounds++ {
			n := int64(1) << b
			f, err := NewFeistel(n, DeriveKey(uint64(b), "bits", uint64(rounds)), rounds)
			if err != nil {
				t.Fatal(err)
			}
			f.mix = rounds%2 == 0 // both round functions
			seen := make([]bool, n)
			for x := uint64(0); x < uint64(n); x++ {
				y := f.encrypt(x)
				if y >= uint64(n) || seen[y] {
					t.Fatalf("b=%d rounds=%d: encrypt(%d)=%d repeats or overflows", b, rounds, x, y)
				}
				seen[y] = true
				if f.decrypt(y) != x {
					t.Fatalf("b=%d rounds=%d: decrypt(encrypt(%d)) = %d", b, rounds, x, f.decrypt(y))
				}
			}
		}
	}
}

// TestPermutationLargeN samples huge domains: Index stays in range, a window
// of consecutive inputs maps injectively, and Inverse undoes Index.
func TestPermutationLargeN(t *testing.T) {
	lens := []int64{1<<40 + 12345, 1<<41 - 1, 1 << 50, 1<<61 + 1, MaxPermLen, 999_999_999_989}
	for _, spec := range permSpecs {
		for _, n := range lens {
			for seed := uint64(0); seed < 3; seed++ {
				p, err := NewPermutation(spec, n, DeriveKey(seed, "large"))
				if err != nil {
					t.Fatal(err)
				}
				seen := make(map[int64]int64, 4096)
				for _, start := range []int64{0, n/2 - 2048, n - 2048} {
					for i := start; i < start+2048; i++ {
						y := p.Index(i)
						if y < 0 || y >= n {
							t.Fatalf("%+v N=%d: Index(%d)=%d out of range", spec, n, i, y)
						}
						if j, dup := seen[y]; dup && j != i {
							t.Fatalf("%+v N=%d: Index(%d) = Index(%d) = %d", spec, n, i, j, y)
						}
						seen[y] = i
						if back := p.Inverse(y); back != i {
							t.Fatalf("%+v N=%d: Inverse(Index(%d)) = %d", spec, n, i, back)
						}
					}
				}
			}
		}
	}
}

func TestPermutationDeterministicAndKeyed(t *testing.T) {
	const n = 10007
	a, _ := NewFeistel(n, DeriveKey(1, "order/web", 0), 5)
	b, _ := NewFeistel(n, DeriveKey(1, "order/web", 0), 5)
	c, _ := NewFeistel(n, DeriveKey(1, "order/web", 1), 5) // next epoch
	d, _ := NewFeistel(n, DeriveKey(2, "order/web", 0), 5) // other seed
	same, sameC, sameD := 0, 0, 0
	for i := int64(0); i < n; i++ {
		if a.Index(i) == b.Index(i) {
			same++
		}
		if a.Index(i) == c.Index(i) {
			sameC++
		}
		if a.Index(i) == d.Index(i) {
			sameD++
		}
	}
	if same != n {
		t.Fatalf("same key gave different permutations (%d/%d agree)", same, n)
	}
	// Independent permutations agree in ~1 place on average.
	if sameC > 20 || sameD > 20 {
		t.Fatalf("epoch/seed change barely reshuffles: %d and %d fixed agreements of %d", sameC, sameD, n)
	}
}

func TestPermutationErrors(t *testing.T) {
	cases := []struct {
		spec PermSpec
		n    int64
	}{
		{PermSpec{Kind: PermFeistel}, 0},
		{PermSpec{Kind: PermFeistel}, -3},
		{PermSpec{Kind: PermFeistel}, MaxPermLen + 1},
		{PermSpec{Kind: PermFeistel, Rounds: 17}, 10},
		{PermSpec{Kind: PermLCG, LCGStride: -1}, 10},
		{PermSpec{Kind: "bogus"}, 10},
		{PermSpec{Kind: PermFeistel, Round: "add"}, 10},
	}
	for _, c := range cases {
		if _, err := NewPermutation(c.spec, c.n, 1); err == nil {
			t.Errorf("%+v N=%d: want error", c.spec, c.n)
		}
	}
}

func TestLCGStride(t *testing.T) {
	l, err := NewLCG(1000, 9, 7)
	if err != nil {
		t.Fatal(err)
	}
	if l.Stride() != 7 {
		t.Fatalf("stride %d, want 7", l.Stride())
	}
	l, _ = NewLCG(1000, 9, 10) // gcd(10,1000) ≠ 1 → next coprime is 11
	if l.Stride() != 11 {
		t.Fatalf("stride %d, want 11", l.Stride())
	}
	for i := int64(0); i < 999; i++ {
		if d := (l.Index(i+1) - l.Index(i) + 1000) % 1000; d != 11 {
			t.Fatalf("adjacent distance %d, want the stride 11", d)
		}
	}
}

func BenchmarkFeistelIndex(b *testing.B) {
	f, _ := NewFeistel(1_000_003, 42, 5)
	var s int64
	for i := 0; i < b.N; i++ {
		s += f.Index(int64(i % 1_000_003))
	}
	_ = s
}

func BenchmarkLCGIndex(b *testing.B) {
	l, _ := NewLCG(1_000_003, 42, 0)
	var s int64
	for i := 0; i < b.N; i++ {
		s += l.Index(int64(i % 1_000_003))
	}
	_ = s
}
