package tokenizer

import (
	"unicode"
	"unicode/utf8"
)

// The pre-tokenisation patterns of OpenAI's cl100k_base and o200k_base
// encodings, as the shipped rank files' JSON (js-tiktoken's pat_str)
// spells them: contractions listed case by case (ASCII only). The
// (?i:…) spellings that Python tiktoken and tiktoken-go use are also
// recognised (Cl100kFoldPattern is Llama3Pattern); they differ only in
// that (?i) also folds U+017F (ſ) to 's'.
const (
	// Cl100kPattern is cl100k_base's regex (GPT-3.5/4): as Llama3Pattern
	// with ASCII-only case variants of the contractions.
	Cl100kPattern = `('s|'S|'t|'T|'re|'rE|'Re|'RE|'ve|'vE|'Ve|'VE|'m|'M|'ll|'lL|'Ll|'LL|'d|'D)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	// O200kPattern is o200k_base's regex (GPT-4o): words split at case
	// changes (an upper-case run, then a lower-case run, each allowing
	// modifier letters, other letters and marks), a contraction glued to
	// the word, numbers in groups of 1–3, and '/' kept after punctuation.
	O200kPattern = `[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+('s|'S|'t|'T|'re|'rE|'Re|'RE|'ve|'vE|'Ve|'VE|'m|'M|'ll|'lL|'Ll|'LL|'d|'D)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*('s|'S|'t|'T|'re|'rE|'Re|'RE|'ve|'vE|'Ve|'VE|'m|'M|'ll|'lL|'Ll|'LL|'d|'D)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	// O200kFoldPattern is O200kPattern as Python tiktoken and
	// tiktoken-go spell it, with (?i:…) contractions.
	O200kFoldPattern = `[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`
)

// patternNames maps the names accepted by --pattern to their regex.
var patternNames = map[string]string{
	"gpt2":   GPT2Pattern,
	"llama3": Llama3Pattern,
	"cl100k": Cl100kPattern,
	"o200k":  O200kPattern,
}

// PatternHelp describes the --pattern option of the commands that load a
// tokenizer (LoadOptions.Pattern).
const PatternHelp = "pre-tokenizer override: gpt2 | llama3 | cl100k | o200k | a regex (default: the file's own; a *.tiktoken takes NAME.json beside it)"

// foldASCII is foldAt without (?i)'s Unicode folding: ASCII letters only.
func foldASCII(s string, i int) (byte, int) {
	if i >= len(s) {
		return 0, 0
	}
	b := s[i]
	if b >= 'A' && b <= 'Z' {
		return b + 'a' - 'A', 1
	}
	return b, 1
}

// contraction returns the end of the contraction 's 't 're 've 'm 'll 'd
// (any case, folded by fold) starting at i, or -1.
func contraction(s string, i int, fold func(string, int) (byte, int)) int {
	if i >= len(s) || s[i] != '\'' {
		return -1
	}
	c1, w1 := fold(s, i+1)
	switch c1 {
	case 's', 't', 'm', 'd':
		return i + 1 + w1
	case 'r', 'v':
		if c2, w2 := fold(s, i+1+w1); c2 == 'e' {
			return i + 1 + w1 + w2
		}
	case 'l':
		if c2, w2 := fold(s, i+1+w1); c2 == 'l' {
			return i + 1 + w1 + w2
		}
	}
	return -1
}

// nextCl100k is nextLlama3 with ASCII-only contractions (Cl100kPattern).
func nextCl100k(s string, i int) int {
	if e := contraction(s, i, foldASCII); e >= 0 {
		return e
	}
	return llama3Rest(s, i)
}

// o200k case sets: caseUpper is [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}], caseLower
// is [\p{Ll}\p{Lm}\p{Lo}\p{M}]; Lm, Lo and marks are in both.
const (
	caseUpper = 1 << 0
	caseLower = 1 << 1
)

// caseOf returns the o200k case sets of the rune at s[i] and its width.
// Invalid UTF-8 bytes are in neither.
func caseOf(s string, i int) (uint8, int) {
	c := s[i]
	if c < utf8.RuneSelf {
		switch {
		case c >= 'a' && c <= 'z':
			return caseLower, 1
		case c >= 'A' && c <= 'Z':
			return caseUpper, 1
		}
		return 0, 1
	}
	r, n := utf8.DecodeRuneInString(s[i:])
	switch {
	case r == utf8.RuneError && n == 1:
		return 0, 1
	case unicode.Is(unicode.Ll, r):
		return caseLower, n
	case unicode.Is(unicode.Lu, r), unicode.Is(unicode.Lt, r):
		return caseUpper, n
	case unicode.Is(unicode.Lm, r), unicode.Is(unicode.Lo, r), unicode.Is(unicode.M, r):
		return caseUpper | caseLower, n
	}
	return 0, n
}

// caseRun returns the end of the run of runes in set starting at i.
func caseRun(s string, i int, set uint8) int {
	for i < len(s) {
		f, n := caseOf(s, i)
		if f&set == 0 {
			return i
		}
		i += n
	}
	return i
}

// o200kUpperLower matches `[upper]*[lower]+` at p as a backtracking regex
// engine does: the upper run is taken whole, then the lower run after it;
// when no lower rune follows, the engine gives back upper runes until the
// last one that is also lower, which alone forms the lower part. -1 when
// there is none.
func o200kUpperLower(s string, p int) int {
	a, last, lastN := p, -1, 0
	for a < len(s) {
		f, n := caseOf(s, a)
		if f&caseUpper == 0 {
			break
		}
		if f&caseLower != 0 {
			last, lastN = a, n
		}
		a += n
	}
	if a < len(s) {
		if f, n := caseOf(s, a); f&caseLower != 0 {
			return caseRun(s, a+n, caseLower)
		}
	}
	if last >= 0 {
		return last + lastN
	}
	return -1
}

// o200kUpperPlus matches `[upper]+[lower]*` at p, or -1.
func o200kUpperPlus(s string, p int) int {
	if p >= len(s) {
		return -1
	}
	if f, _ := caseOf(s, p); f&caseUpper == 0 {
		return -1
	}
	return caseRun(s, caseRun(s, p, caseUpper), caseLower)
}

// nextO200k returns the end of the o200k pre-token starting at i < len(s),
// with contractions folded by fold.
func nextO200k(s string, i int, fold func(string, int) (byte, int)) int {
	b := s[i]
	c, n := class(s, i)
	// `P?[upper]*[lower]+C?|P?[upper]+[lower]*C?` with P =
	// [^\r\n\p{L}\p{N}]: each alternative first with P, then without.
	prefix := c != clsLetter && c != clsNumber && b != '\r' && b != '\n'
	for _, word := range [2]func(string, int) int{o200kUpperLower, o200kUpperPlus} {
		for _, p := range [2]int{i + n, i} {
			if p == i+n && !prefix {
				continue
			}
			if e := word(s, p); e >= 0 {
				if ce := contraction(s, e, fold); ce >= 0 {
					return ce
				}
				return e
			}
		}
	}
	if c == clsNumber { // \p{N}{1,3}
		j := i + n
		for k := 0; k < 2 && j < len(s); k++ {
			c2, n2 := class(s, j)
			if c2 != clsNumber {
				break
			}
			j += n2
		}
		return j
	}
	// ` ?[^\s\p{L}\p{N}]+[\r\n/]*`
	j := -1
	if c == clsOther {
		j = runOf(s, i+n, clsOther)
	} else if b == ' ' && i+1 < len(s) {
		if c2, n2 := class(s, i+1); c2 == clsOther {
			j = runOf(s, i+1+n2, clsOther)
		}
	}
	if j >= 0 {
		for j < len(s) && (s[j] == '\r' || s[j] == '\n' || s[j] == '/') {
			j++
		}
		return j
	}
	return newlineOrSpace(s, i)
}

func nextO200kASCII(s string, i int) int { return nextO200k(s, i, foldASCII) }
func nextO200kFold(s string, i int) int  { return nextO200k(s, i, foldAt) }
