package tokenizer

import (
	"fmt"
	"unicode"
	"unicode/utf8"

	"github.com/dlclark/regexp2/v2"
)

// The pre-tokenisation patterns kestrel implements with a hand-written
// scanner. Both are reproduced exactly (tests compare the scanner with
// regexp2 on all shipped text and on random strings).
const (
	// GPT2Pattern is the pre-tokenisation regex of GPT-2 (and r50k/p50k,
	// GPT-NeoX): contractions, letters, numbers and other symbols each with
	// an optional leading space, and whitespace runs that leave their last
	// space to the next word.
	GPT2Pattern = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`
	// Llama3Pattern is the Llama-3 (cl100k-like) pattern: case-insensitive
	// contractions, a word absorbs one leading non-letter, digits are split
	// into groups of 1–3, and newlines stay with preceding whitespace.
	Llama3Pattern = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
)

// character classes of the patterns
const (
	clsOther  = 0 // [^\s\p{L}\p{N}], including invalid UTF-8 bytes
	clsLetter = 1 // \p{L}
	clsNumber = 2 // \p{N}
	clsSpace  = 3 // \s
)

var asciiClass [128]uint8

func init() {
	for c := 0; c < 128; c++ {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
			asciiClass[c] = clsLetter
		case c >= '0' && c <= '9':
			asciiClass[c] = clsNumber
		case c == ' ', c >= '\t' && c <= '\r':
			asciiClass[c] = clsSpace
		default:
			asciiClass[c] = clsOther
		}
	}
}

// class returns the class of the rune starting at s[i] and its width in
// bytes. An invalid UTF-8 byte is one rune of class other (as U+FFFD is).
func class(s string, i int) (uint8, int) {
	c := s[i]
	if c < utf8.RuneSelf {
		return asciiClass[c], 1
	}
	r, n := utf8.DecodeRuneInString(s[i:])
	switch {
	case unicode.IsLetter(r):
		return clsLetter, n
	case unicode.IsNumber(r):
		return clsNumber, n
	case unicode.IsSpace(r):
		return clsSpace, n
	}
	return clsOther, n
}

// runOf returns the end of the run of class c starting at i.
func runOf(s string, i int, c uint8) int {
	for i < len(s) {
		if b := s[i]; b < utf8.RuneSelf {
			if asciiClass[b] != c {
				return i
			}
			i++
			continue
		}
		cc, n := class(s, i)
		if cc != c {
			return i
		}
		i += n
	}
	return i
}

// spaceRun scans the whitespace run starting at i and returns its end and
// the start of its last rune.
func spaceRun(s string, i int) (end, last int) {
	last = i
	for i < len(s) {
		c, n := class(s, i)
		if c != clsSpace {
			break
		}
		last = i
		i += n
	}
	return i, last
}

// trailingSpace resolves `\s+(?!\S)|\s+` for a whitespace run [i,end) whose
// last rune starts at last.
func trailingSpace(s string, i, end, last int) int {
	if end == len(s) || last == i {
		return end
	}
	return last
}

// nextGPT2 returns the end of the GPT-2 pre-token starting at i < len(s).
func nextGPT2(s string, i int) int {
	b := s[i]
	if b == '\'' && i+1 < len(s) {
		switch s[i+1] {
		case 's', 't', 'm', 'd':
			return i + 2
		case 'r', 'v':
			if i+2 < len(s) && s[i+2] == 'e' {
				return i + 3
			}
		case 'l':
			if i+2 < len(s) && s[i+2] == 'l' {
				return i + 3
			}
		}
	}
	start := i
	if b == ' ' && i+1 < len(s) {
		if c, n := class(s, i+1); c != clsSpace {
			return runOf(s, i+1+n, c)
		}
	}
	c, n := class(s, start)
	if c != clsSpace {
		return runOf(s, start+n, c)
	}
	end, last := spaceRun(s, i)
	return trailingSpace(s, i, end, last)
}

// foldAt returns the case-folded ASCII letter at s[i] and its width: ASCII
// letters fold to lower case and U+017F (ſ) folds to 's', as (?i) does.
func foldAt(s string, i int) (byte, int) {
	if i >= len(s) {
		return 0, 0
	}
	b := s[i]
	if b >= 'A' && b <= 'Z' {
		return b + 'a' - 'A', 1
	}
	if b == 0xC5 && i+1 < len(s) && s[i+1] == 0xBF {
		return 's', 2
	}
	return b, 1
}

// nextLlama3 returns the end of the Llama-3 pre-token starting at i < len(s).
func nextLlama3(s string, i int) int {
	if e := contraction(s, i, foldAt); e >= 0 {
		return e
	}
	return llama3Rest(s, i)
}

// llama3Rest is the Llama-3 / cl100k pattern after its contractions.
func llama3Rest(s string, i int) int {
	b := s[i]
	c, n := class(s, i)
	switch c {
	case clsLetter:
		return runOf(s, i+n, clsLetter)
	case clsNumber:
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
	// [^\r\n\p{L}\p{N}]?\p{L}+ : one space/other rune glued to a word
	if b != '\r' && b != '\n' && i+n < len(s) {
		if c2, n2 := class(s, i+n); c2 == clsLetter {
			return runOf(s, i+n+n2, clsLetter)
		}
	}
	// ` ?[^\s\p{L}\p{N}]+[\r\n]*`
	j := -1
	if c == clsOther {
		j = runOf(s, i+n, clsOther)
	} else if b == ' ' && i+1 < len(s) {
		if c2, n2 := class(s, i+1); c2 == clsOther {
			j = runOf(s, i+1+n2, clsOther)
		}
	}
	if j >= 0 {
		for j < len(s) && (s[j] == '\r' || s[j] == '\n') {
			j++
		}
		return j
	}
	return newlineOrSpace(s, i)
}

// newlineOrSpace resolves `\s*[\r\n]+|\s+(?!\S)|\s+` at i.
func newlineOrSpace(s string, i int) int {
	end, last := spaceRun(s, i)
	for k := end - 1; k >= i; k-- {
		if s[k] == '\r' || s[k] == '\n' {
			return k + 1
		}
	}
	return trailingSpace(s, i, end, last)
}

// splitter cuts text into pre-tokens, calling fn with each one in order.
type splitter interface {
	split(s string, fn func(piece string))
}

type scanSplitter func(s string, i int) int

func (f scanSplitter) split(s string, fn func(string)) {
	for i := 0; i < len(s); {
		j := f(s, i)
		fn(s[i:j])
		i = j
	}
}

// regexSplitter handles patterns other than the two built in, with regexp2
// (slower). Invalid UTF-8 bytes are single runes, as in the scanner.
type regexSplitter struct{ re *regexp2.Regexp }

func (r regexSplitter) split(s string, fn func(string)) {
	runes := []rune(s)
	offs := make([]int, 0, len(runes)+1)
	for i := range s { // range visits each rune start, one per invalid byte
		offs = append(offs, i)
	}
	offs = append(offs, len(s))
	m, _ := r.re.FindRunesMatch(runes)
	pos := 0
	for m != nil {
		if m.RuneIndex > pos { // text between matches is its own piece
			fn(s[offs[pos]:offs[m.RuneIndex]])
		}
		if m.RuneLength > 0 {
			fn(s[offs[m.RuneIndex]:offs[m.RuneIndex+m.RuneLength]])
		}
		pos = m.RuneIndex + m.RuneLength
		m, _ = r.re.FindNextMatch(m)
	}
	if pos < len(runes) {
		fn(s[offs[pos]:])
	}
}

// newSplitter returns the splitter for a pattern name ("gpt2", "llama3",
// "cl100k", "o200k") or a regular expression. The built-in patterns (by
// name or by their exact regex) use a hand-written scanner; any other
// regex runs on regexp2.
func newSplitter(pattern string) (splitter, string, error) {
	if full, ok := patternNames[pattern]; ok {
		pattern = full
	}
	switch pattern {
	case "", GPT2Pattern:
		return scanSplitter(nextGPT2), GPT2Pattern, nil
	case Llama3Pattern:
		return scanSplitter(nextLlama3), Llama3Pattern, nil
	case Cl100kPattern:
		return scanSplitter(nextCl100k), Cl100kPattern, nil
	case O200kPattern:
		return scanSplitter(nextO200kASCII), O200kPattern, nil
	case O200kFoldPattern:
		return scanSplitter(nextO200kFold), O200kFoldPattern, nil
	}
	re, err := regexp2.Compile(pattern, regexp2.None)
	if err != nil {
		return nil, "", fmt.Errorf("pre-tokenizer pattern %q: %w", pattern, err)
	}
	return regexSplitter{re}, pattern, nil
}

// PreTokenize splits text into pre-tokens with the named pattern ("gpt2",
// "llama3", "cl100k", "o200k") or a regular expression.
func PreTokenize(pattern, text string) ([]string, error) {
	sp, _, err := newSplitter(pattern)
	if err != nil {
		return nil, err
	}
	var out []string
	sp.split(text, func(p string) { out = append(out, p) })
	return out, nil
}
