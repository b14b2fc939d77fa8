package loader

import (
	"fmt"
	"math/bits"
)

// Permutation is a stateless pseudo-random permutation of [0, Len()).
// Index and Inverse cost O(rounds) and never materialise a table.
// Both assume their argument lies in [0, Len()); outside it the result is
// unspecified (but never a panic).
type Permutation interface {
	Len() int64
	Index(i int64) int64
	Inverse(y int64) int64
}

// Permutation kinds accepted by NewPermutation and data.permutation.
const (
	PermFeistel = "feistel"
	PermLCG     = "lcg"
)

// Feistel round functions.
const (
	// RoundMul is Levanter's F(R, k) = (R·2654435761 + k) mod 2^w. It is
	// affine, and its only non-linearity is the carries of the addition; the
	// shuffle report measures residual autocorrelation of batch composition
	// (|ACF| up to ~0.3 at lags 2–3 on topic-sorted data) but no phases.
	RoundMul = "mul"
	// RoundMix is F(R, k) = SplitMix64 finaliser of (R xor k), mod 2^w: a
	// non-linear round function, whose batches are indistinguishable from
	// i.i.d. in the same report (|ACF| ≈ 0.05, the noise level).
	RoundMix = "mix"
)

// MaxPermLen is the largest domain a permutation supports (2^62).
const MaxPermLen = int64(1) << 62

// maxRounds bounds the Feistel round count (keys live in a fixed array so a
// Feistel value never allocates).
const maxRounds = 16

// feistelMul is the multiplier of the round function (Knuth's 2^32/φ).
const feistelMul = 2654435761

// PermSpec chooses and parameterises a permutation.
type PermSpec struct {
	Kind      string // PermFeistel or PermLCG
	Rounds    int    // Feistel rounds (0 = 5)
	Round     string // Feistel round function: RoundMul (Levanter's, default) or RoundMix
	LCGStride int64  // LCG multiplier a: 0 = derived from the key; >0 = the smallest a ≥ LCGStride coprime with N
}

// NewPermutation returns the permutation of [0, n) that spec and key select.
// The same (spec, n, key) always gives the same permutation.
func NewPermutation(spec PermSpec, n int64, key uint64) (Permutation, error) {
	if n < 1 || n > MaxPermLen {
		return nil, fmt.Errorf("permutation: length %d outside [1, 2^62]", n)
	}
	switch spec.Kind {
	case PermFeistel, "":
		f, err := NewFeistel(n, key, spec.Rounds)
		if err != nil {
			return nil, err
		}
		switch spec.Round {
		case RoundMul, "":
		case RoundMix:
			f.mix = true
		default:
			return nil, fmt.Errorf("feistel: unknown round function %q (want %q or %q)", spec.Round, RoundMul, RoundMix)
		}
		return f, nil
	case PermLCG:
		l, err := NewLCG(n, key, spec.LCGStride)
		if err != nil {
			return nil, err
		}
		return l, nil
	}
	return nil, fmt.Errorf("permutation: unknown kind %q (want %q or %q)", spec.Kind, PermFeistel, PermLCG)
}

// Feistel is a keyed Feistel-network permutation of [0, N) (Levanter's
// construction, seed 002 §6.3.6).
//
// N is embedded in [0, 2^b) with 2^b the smallest power of two ≥ N. A b-bit
// value is split into a left half of wl = ⌈b/2⌉ bits (high bits) and a right
// half of wr = ⌊b/2⌋ bits (low bits). Each round maps (L, R) to
//
//	(L', R') = (R, L xor F(R, kᵢ)),  F(R, k) = (R·2654435761 + k) mod 2^|L|
//
// (or, with RoundMix, a non-linear F: see RoundMix)
// so the new left half has the old right half's width and vice versa: for
// odd b the widths alternate (⌈b/2⌉,⌊b/2⌋) → (⌊b/2⌋,⌈b/2⌉) → … and the value
// is re-packed as L'·2^|R'| + R'. Each round is a bijection on b-bit values
// (its inverse is R = L', L = R' xor F(L', kᵢ)), so the composition is a
// permutation of [0, 2^b). F is reduced modulo the width of the half it is
// xored into, which for even b is exactly the 2^|R| of the Levanter formula.
//
// For N not a power of two, Index cycle-walks: it re-applies the network
// until the value falls below N. This terminates because the network is a
// permutation of [0, 2^b): the cycle through a start value i < N returns to
// i, so it meets a value < N; and since N > 2^(b-1) the expected number of
// applications is below 2. Restricting a permutation by cycle walking gives
// a permutation of [0, N).
type Feistel struct {
	n      int64
	wl, wr uint
	rounds int
	mix    bool // RoundMix instead of RoundMul
	keys   [maxRounds]uint64
}

// NewFeistel returns the Feistel permutation of [0, n) keyed by key with the
// given number of rounds (0 = 5). Round keys are the SplitMix64 stream of key.
func NewFeistel(n int64, key uint64, rounds int) (Feistel, error) {
	if n < 1 || n > MaxPermLen {
		return Feistel{}, fmt.Errorf("feistel: length %d outside [1, 2^62]", n)
	}
	if rounds == 0 {
		rounds = 5
	}
	if rounds < 1 || rounds > maxRounds {
		return Feistel{}, fmt.Errorf("feistel: rounds %d outside [1, %d]", rounds, maxRounds)
	}
	b := uint(bits.Len64(uint64(n - 1))) // 2^b ≥ n; b = 0 for n = 1
	f := Feistel{n: n, wl: (b + 1) / 2, wr: b / 2, rounds: rounds}
	st := key
	for i := 0; i < rounds; i++ {
		f.keys[i] = splitMix64(&st)
	}
	return f, nil
}

// Len is N.
func (f Feistel) Len() int64 { return f.n }

func mask(w uint) uint64 { return (uint64(1) << w) - 1 }

// round is F(R, k) before the mask.
func (f Feistel) round(r, k uint64) uint64 {
	if !f.mix {
		return r*feistelMul + k
	}
	z := r ^ k
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// encrypt applies the rounds once to a b-bit value.
func (f Feistel) encrypt(x uint64) uint64 {
	a, c := f.wl, f.wr // widths of L and R
	l, r := x>>c, x&mask(c)
	for i := 0; i < f.rounds; i++ {
		l, r = r, (l^f.round(r, f.keys[i]))&mask(a)
		a, c = c, a
	}
	return l<<c | r
}

// decrypt undoes encrypt.
func (f Feistel) decrypt(y uint64) uint64 {
	a, c := f.wl, f.wr
	if f.rounds%2 == 1 {
		a, c = c, a
	}
	l, r := y>>c, y&mask(c)
	for i := f.rounds - 1; i >= 0; i-- {
		// current (L width a, R width c) came from (R^F(L), L) of widths (c, a)
		l, r = (r^f.round(l, f.keys[i]))&mask(c), l
		a, c = c, a
	}
	return l<<c | r
}

// Index returns the image of i ∈ [0, N).
func (f Feistel) Index(i int64) int64 {
	x := f.encrypt(uint64(i) & mask(f.wl+f.wr))
	for x >= uint64(f.n) {
		x = f.encrypt(x)
	}
	return int64(x)
}

// Inverse returns i such that Index(i) = y.
func (f Feistel) Inverse(y int64) int64 {
	x := f.decrypt(uint64(y) & mask(f.wl+f.wr))
	for x >= uint64(f.n) {
		x = f.decrypt(x)
	}
	return int64(x)
}

// LCG is the affine permutation p(x) = (a·x + b) mod N with gcd(a, N) = 1,
// the "linear" shuffle Marin used before switching to Feistel. Adjacent
// inputs land a constant stride a apart, which keeps block structure.
type LCG struct {
	n, a, b, ainv uint64
}

// NewLCG returns the affine permutation of [0, n) keyed by key. stride > 0
// fixes the multiplier to the smallest value ≥ stride (mod n) coprime with n;
// stride = 0 draws it from the key, as Levanter does.
func NewLCG(n int64, key uint64, stride int64) (LCG, error) {
	if n < 1 || n > MaxPermLen {
		return LCG{}, fmt.Errorf("lcg: length %d outside [1, 2^62]", n)
	}
	if stride < 0 {
		return LCG{}, fmt.Errorf("lcg: stride %d is negative", stride)
	}
	un := uint64(n)
	if un == 1 {
		return LCG{n: 1, a: 0, b: 0}, nil
	}
	st := key
	var a uint64
	if stride > 0 {
		a = uint64(stride) % un
	} else {
		a = splitMix64(&st) % un
	}
	if a == 0 {
		a = 1
	}
	for gcd(a, un) != 1 {
		a++
		if a == un {
			a = 1
		}
	}
	b := splitMix64(&st) % un
	return LCG{n: un, a: a, b: b, ainv: modInverse(a, un)}, nil
}

// Len is N.
func (l LCG) Len() int64 { return int64(l.n) }

// Stride is the multiplier a.
func (l LCG) Stride() int64 { return int64(l.a) }

// Index returns (a·i + b) mod N.
func (l LCG) Index(i int64) int64 {
	if l.n == 1 {
		return 0
	}
	return int64(addMod(mulMod(l.a, uint64(i)%l.n, l.n), l.b, l.n))
}

// Inverse returns a⁻¹·(y − b) mod N.
func (l LCG) Inverse(y int64) int64 {
	if l.n == 1 {
		return 0
	}
	d := (uint64(y)%l.n + l.n - l.b) % l.n
	return int64(mulMod(l.ainv, d, l.n))
}

func mulMod(x, y, m uint64) uint64 {
	hi, lo := bits.Mul64(x, y)
	_, rem := bits.Div64(hi%m, lo, m)
	return rem
}

func addMod(x, y, m uint64) uint64 {
	s := x + y // x, y < m ≤ 2^62: no overflow
	if s >= m {
		s -= m
	}
	return s
}

func gcd(a, b uint64) uint64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// modInverse returns a⁻¹ mod m for gcd(a, m) = 1 (extended Euclid).
func modInverse(a, m uint64) uint64 {
	t, newT := int64(0), int64(1)
	r, newR := int64(m), int64(a%m)
	for newR != 0 {
		q := r / newR
		t, newT = newT, t-q*newT
		r, newR = newR, r-q*newR
	}
	if t < 0 {
		t += int64(m)
	}
	return uint64(t)
}

// splitMix64 advances the SplitMix64 state and returns its next output
// (Steele, Lea & Flood 2014: add the golden-ratio increment, then a
// xor-shift-multiply finaliser).
func splitMix64(state *uint64) uint64 {
	*state += 0x9e3779b97f4a7c15
	z := *state
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// DeriveKey mixes a seed, a purpose string and any number of indices (an
// epoch, a stage, a block …) into one 64-bit key. The purpose is hashed with
// 64-bit FNV-1a; each part is folded in with a SplitMix64 step, so keys for
// different (purpose, indices) are unrelated. No global state is involved.
func DeriveKey(seed uint64, purpose string, idx ...uint64) uint64 {
	st := seed
	h := splitMix64(&st)
	fnv := uint64(14695981039346656037)
	for i := 0; i < len(purpose); i++ {
		fnv ^= uint64(purpose[i])
		fnv *= 1099511628211
	}
	st = h ^ fnv
	h = splitMix64(&st)
	for _, v := range idx {
		st = h ^ v
		h = splitMix64(&st)
	}
	return h
}
