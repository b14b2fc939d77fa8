// Package dedup finds exact and near duplicate documents for `kestrel
// prepare`: Exact hashes normalised text with xxh3; Near computes MinHash
// signatures over word n-grams and clusters documents whose signatures
// collide in an LSH band (union-find), keeping one document per cluster.
package dedup

import (
	"unicode"
	"unicode/utf8"
)

// NormalizeText is the canonical form both Exact and Near hash: letters
// lowercased (Unicode simple folding via unicode.ToLower), every Unicode
// punctuation character (category P) removed, every run of whitespace
// turned into one ASCII space, and leading/trailing space trimmed. Symbols
// (category S, e.g. "$", "+", "=") and digits are kept. So "Hello,  World!"
// and "hello world" normalise to the same "hello world".
func NormalizeText(s string) string {
	return string(AppendNormalized(make([]byte, 0, len(s)), s))
}

// AppendNormalized appends NormalizeText(s) to dst without other
// allocations and returns the extended slice.
func AppendNormalized(dst []byte, s string) []byte {
	start := len(dst)
	pendingSpace := false
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			i++
			switch {
			case c == ' ' || c == '\n' || c == '\t' || c == '\r' || c == '\v' || c == '\f':
				pendingSpace = len(dst) > start
			case asciiPunct[c]:
			default:
				if pendingSpace {
					dst = append(dst, ' ')
					pendingSpace = false
				}
				if c >= 'A' && c <= 'Z' {
					c += 'a' - 'A'
				}
				dst = append(dst, c)
			}
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		i += n
		switch {
		case unicode.IsSpace(r):
			pendingSpace = len(dst) > start
		case unicode.IsPunct(r):
		default:
			if pendingSpace {
				dst = append(dst, ' ')
				pendingSpace = false
			}
			dst = utf8.AppendRune(dst, unicode.ToLower(r))
		}
	}
	return dst
}

// asciiPunct marks the ASCII characters of Unicode category P.
var asciiPunct = func() (t [128]bool) {
	for c := 0; c < 128; c++ {
		t[c] = unicode.IsPunct(rune(c))
	}
	return
}()
