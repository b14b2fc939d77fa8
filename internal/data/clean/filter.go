package clean

import (
	"compress/flate"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/zeebo/xxh3"

	"github.com/kestrel-lm/kestrel/internal/data/ngram"
)

// Stage names, in the order Apply runs them.
const (
	StageInput            = "input"
	StageLangID           = "langid"
	StageGopherRepetition = "gopher_repetition"
	StageCompression      = "compression"
	StageGopherQuality    = "gopher_quality"
	StageC4               = "c4"
	StageFineWeb          = "fineweb"
	StageOLMoNgram        = "olmo_ngram"
)

// Verdict is the outcome of the filters on one document. A kept document
// has Keep true and empty Stage/Rule. Detail shows the measured value
// against the threshold, e.g. "2.1 < 3".
type Verdict struct {
	Keep   bool
	Stage  string
	Rule   string
	Detail string
}

// Key returns "stage/rule", the form Rules lists.
func (v Verdict) Key() string { return v.Stage + "/" + v.Rule }

// Filter applies a validated Config. It is safe for concurrent use.
type Filter struct {
	cfg      Config
	stop     map[string]struct{}
	keepLang map[string]bool
	pool     sync.Pool
	rules    []string
}

// New validates cfg and returns a Filter; errors name the offending field.
func New(cfg Config) (*Filter, error) {
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("clean config: %w", err)
	}
	f := &Filter{cfg: cfg, stop: lowerWords(cfg.GopherQuality.StopWords), keepLang: cfg.LangID.keepSet()}
	f.pool.New = func() any { return &scratch{} }
	f.rules = f.buildRules()
	return f, nil
}

// Rules lists "stage/rule" for every rule of the enabled families (plus
// "input/empty"), in Apply's order, so callers can report zero counts.
// Language ID lists "langid/low_confidence" and "langid/und"; its other
// rules are the detected languages' codes ("langid/fr"), which appear as
// they are met.
func (f *Filter) Rules() []string { return append([]string(nil), f.rules...) }

func (f *Filter) buildRules() []string {
	r := []string{StageInput + "/empty"}
	add := func(stage string, names ...string) {
		for _, n := range names {
			r = append(r, stage+"/"+n)
		}
	}
	if f.cfg.LangID.Enabled {
		add(StageLangID, "low_confidence", Und)
	}
	if f.cfg.GopherRepetition.Enabled {
		add(StageGopherRepetition, "dup_line_frac", "dup_line_char_frac", "dup_para_frac", "dup_para_char_frac")
		for _, n := range f.cfg.GopherRepetition.TopNgramSizes {
			add(StageGopherRepetition, "top_"+strconv.Itoa(n)+"gram")
		}
		for _, n := range f.cfg.GopherRepetition.DupNgramSizes {
			add(StageGopherRepetition, "dup_"+strconv.Itoa(n)+"gram")
		}
	}
	if f.cfg.Compression.Enabled {
		add(StageCompression, "ratio")
	}
	if f.cfg.GopherQuality.Enabled {
		add(StageGopherQuality, "min_words", "max_words", "mean_word_length", "symbol_word_ratio",
			"bullet_lines", "ellipsis_lines", "alpha_words", "stop_words")
	}
	if f.cfg.C4.Enabled {
		add(StageC4, "lorem_ipsum", "curly_brace", "no_lines_left", "too_few_sentences")
	}
	if f.cfg.FineWeb.Enabled {
		add(StageFineWeb, "line_punct_ratio", "short_line_ratio", "dup_line_char_ratio", "newline_word_ratio")
	}
	if f.cfg.OLMoNgram.Enabled {
		add(StageOLMoNgram, "repeated_ngram_run")
	}
	return r
}

// Config returns the filter's configuration.
func (f *Filter) Config() Config { return f.cfg }

// Check runs every enabled rule and reports the first failure. The C4 line
// rules are applied (on a copy) before the FineWeb and OLMo rules, exactly
// as in Apply; use Apply to get the rewritten text.
func (f *Filter) Check(text string) Verdict {
	_, v := f.Apply(text)
	return v
}

// Apply runs the stages in order — language ID (first: it names the
// language of a page every English-specific rule after it would reject for
// another reason, and judges at most LangID.MaxBytes), Gopher repetition,
// compression ratio (after the repetition rules, so it counts what they
// missed), Gopher quality, C4 (which may remove lines), FineWeb, OLMo
// n-gram — and returns the possibly rewritten text with the verdict.
// Rejected documents return "".
func (f *Filter) Apply(text string) (string, Verdict) {
	s := f.pool.Get().(*scratch)
	defer f.pool.Put(s)
	if strings.TrimSpace(text) == "" {
		return "", reject(StageInput, "empty", "no non-space characters")
	}
	if f.cfg.LangID.Enabled {
		if v, bad := f.langID(text); bad {
			return "", v
		}
	}
	s.analyse(text)
	if f.cfg.GopherRepetition.Enabled {
		if v, bad := f.gopherRepetition(s, text); bad {
			return "", v
		}
	}
	if f.cfg.Compression.Enabled {
		if v, bad := f.compression(s, text); bad {
			return "", v
		}
	}
	if f.cfg.GopherQuality.Enabled {
		if v, bad := f.gopherQuality(s, text); bad {
			return "", v
		}
	}
	if f.cfg.C4.Enabled {
		out, v, bad := f.c4(text)
		if bad {
			return "", v
		}
		if out != text {
			text = out
			s.analyse(text)
		}
	}
	if f.cfg.FineWeb.Enabled {
		if v, bad := f.fineweb(s, text); bad {
			return "", v
		}
	}
	if f.cfg.OLMoNgram.Enabled {
		if v, bad := f.olmo(s); bad {
			return "", v
		}
	}
	return text, Verdict{Keep: true}
}

func reject(stage, rule, detail string) Verdict {
	return Verdict{Stage: stage, Rule: rule, Detail: detail}
}

func ff(v float64) string { return strconv.FormatFloat(v, 'g', 4, 64) }

// scratch is the per-call analysis of one document, pooled.
type scratch struct {
	words  []span   // whitespace-separated words
	hashes []uint64 // xxh3 of each word's bytes
	clen   []int    // clen[i] = total bytes of words[0:i]
	grams  []uint64 // n-gram hashes, see gramHashes
	tab    table
	zw     *flate.Writer // the compression rule's writer, reused
	zbuf   []byte        // its input buffer
}

type span struct{ a, b int32 }

func (s *scratch) analyse(text string) {
	s.words = s.words[:0]
	s.hashes = s.hashes[:0]
	s.clen = append(s.clen[:0], 0)
	start := -1
	for i := 0; i < len(text); {
		c := text[i]
		var sp bool
		size := 1
		if c < utf8.RuneSelf {
			sp = c == ' ' || c == '\n' || c == '\t' || c == '\r' || c == '\v' || c == '\f'
		} else {
			r, n := utf8.DecodeRuneInString(text[i:])
			size = n
			sp = unicode.IsSpace(r)
		}
		if sp {
			if start >= 0 {
				s.addWord(text, start, i)
				start = -1
			}
		} else if start < 0 {
			start = i
		}
		i += size
	}
	if start >= 0 {
		s.addWord(text, start, len(text))
	}
}

func (s *scratch) addWord(text string, a, b int) {
	s.words = append(s.words, span{int32(a), int32(b)})
	s.hashes = append(s.hashes, xxh3.HashString(text[a:b]))
	s.clen = append(s.clen, s.clen[len(s.clen)-1]+b-a)
}

// table is an open-addressing uint64 → int32 counter reused across calls.
type table struct {
	keys []uint64
	vals []int32
	mask int
}

func (t *table) reset(n int) {
	size := 16
	for size < 2*n {
		size <<= 1
	}
	if cap(t.keys) >= size {
		t.keys = t.keys[:size]
		t.vals = t.vals[:size]
		clear(t.keys)
		clear(t.vals)
	} else {
		t.keys = make([]uint64, size)
		t.vals = make([]int32, size)
	}
	t.mask = size - 1
}

// inc adds one to key's count and returns the new count.
func (t *table) inc(k uint64) int32 {
	if k == 0 {
		k = 0x9e3779b97f4a7c15
	}
	i := int(k>>7) & t.mask
	for {
		switch t.keys[i] {
		case k:
			t.vals[i]++
			return t.vals[i]
		case 0:
			t.keys[i] = k
			t.vals[i] = 1
			return 1
		}
		i = (i + 1) & t.mask
	}
}

// gramHashes sets s.grams[j] to a hash of words j..j+k-1 for every j: a
// polynomial rolling hash of the (random, xxh3) word hashes mod 2^64, so
// each n-gram costs O(1) instead of O(k).
func (s *scratch) gramHashes(k int) []uint64 {
	s.grams = ngram.Rolling(s.grams[:0], s.hashes, k)
	return s.grams
}

// lines calls fn for each "\n"-separated line of text (empty ones too).
func lines(text string, fn func(line string)) {
	for len(text) > 0 {
		i := strings.IndexByte(text, '\n')
		if i < 0 {
			fn(text)
			return
		}
		fn(text[:i])
		text = text[i+1:]
	}
}

// paragraphs calls fn for each paragraph: text split on runs of two or
// more newlines, outer newlines trimmed.
func paragraphs(text string, fn func(p string)) {
	text = strings.Trim(text, "\n")
	for len(text) > 0 {
		i := strings.Index(text, "\n\n")
		if i < 0 {
			fn(text)
			return
		}
		fn(text[:i])
		text = strings.TrimLeft(text[i:], "\n")
	}
}

// dupUnits counts the non-empty lines of text (its paragraphs when para)
// and how many of them, and how many of their characters, repeat an
// earlier one. It walks the text like lines and paragraphs, without a
// callback, to stay allocation-free.
func (s *scratch) dupUnits(text string, para bool) (n, dup, dupChars int) {
	sep := "\n"
	if para {
		sep, text = "\n\n", strings.Trim(text, "\n")
	}
	s.tab.reset(strings.Count(text, sep) + 1)
	for len(text) > 0 {
		u := text
		if i := strings.Index(text, sep); i >= 0 {
			u, text = text[:i], text[i+1:]
			if para {
				text = strings.TrimLeft(text, "\n")
			}
		} else {
			text = ""
		}
		if u == "" {
			continue
		}
		n++
		if s.tab.inc(xxh3.HashString(u)) > 1 {
			dup++
			dupChars += len(u)
		}
	}
	return n, dup, dupChars
}

func (f *Filter) gopherRepetition(s *scratch, text string) (Verdict, bool) {
	c := f.cfg.GopherRepetition
	total := float64(len(text))
	// Duplicate lines (runs of "\n" separate them, as re.split(r"\n+")),
	// then duplicate paragraphs: the share of units seen before and the
	// share of characters in them.
	for _, u := range []struct {
		para               bool
		fracRule, charRule string
		maxFrac, maxChars  float64
	}{
		{false, "dup_line_frac", "dup_line_char_frac", c.MaxDupLineFrac, c.MaxDupLineCharFrac},
		{true, "dup_para_frac", "dup_para_char_frac", c.MaxDupParaFrac, c.MaxDupParaCharFrac},
	} {
		n, dup, dupChars := s.dupUnits(text, u.para)
		if n == 0 {
			continue
		}
		if v := float64(dup) / float64(n); v > u.maxFrac {
			return reject(StageGopherRepetition, u.fracRule, ff(v)+" > "+ff(u.maxFrac)), true
		}
		if v := float64(dupChars) / total; v > u.maxChars {
			return reject(StageGopherRepetition, u.charRule, ff(v)+" > "+ff(u.maxChars)), true
		}
	}
	nw := len(s.hashes)
	// Most frequent n-gram: its characters (words joined by single spaces)
	// times its count, over the text length.
	for i, k := range c.TopNgramSizes {
		if nw < k {
			continue
		}
		s.tab.reset(nw - k + 1)
		var best int32
		bestAt := 0
		for j, g := range s.gramHashes(k) {
			if cnt := s.tab.inc(g); cnt > best {
				best, bestAt = cnt, j
			}
		}
		if best > 1 {
			chars := s.clen[bestAt+k] - s.clen[bestAt] + k - 1
			if v := float64(chars) * float64(best) / total; v > c.TopNgramMaxFrac[i] {
				return reject(StageGopherRepetition, "top_"+strconv.Itoa(k)+"gram", ff(v)+" > "+ff(c.TopNgramMaxFrac[i])), true
			}
		}
	}
	// Duplicate n-grams: scan left to right; a repeated n-gram adds its
	// characters (words concatenated) and the scan jumps past it.
	for i, k := range c.DupNgramSizes {
		if nw < k {
			continue
		}
		s.tab.reset(nw - k + 1)
		rep := 0
		grams := s.gramHashes(k)
		for j := 0; j < len(grams); {
			if s.tab.inc(grams[j]) > 1 {
				rep += s.clen[j+k] - s.clen[j]
				j += k
			} else {
				j++
			}
		}
		if v := float64(rep) / total; v > c.DupNgramMaxFrac[i] {
			return reject(StageGopherRepetition, "dup_"+strconv.Itoa(k)+"gram", ff(v)+" > "+ff(c.DupNgramMaxFrac[i])), true
		}
	}
	return Verdict{}, false
}

func isPunctRune(r rune) bool {
	if r < utf8.RuneSelf {
		return r < 128 && (r >= '!' && r <= '/' || r >= ':' && r <= '@' || r >= '[' && r <= '`' || r >= '{' && r <= '~')
	}
	return unicode.IsPunct(r) || unicode.IsSymbol(r)
}

// trimPunct trims leading and trailing punctuation and symbols.
func trimPunct(w string) string {
	for len(w) > 0 {
		r, n := utf8.DecodeRuneInString(w)
		if !isPunctRune(r) {
			break
		}
		w = w[n:]
	}
	for len(w) > 0 {
		r, n := utf8.DecodeLastRuneInString(w)
		if !isPunctRune(r) {
			break
		}
		w = w[:len(w)-n]
	}
	return w
}

func hasLetter(w string) bool {
	for i := 0; i < len(w); i++ {
		c := w[i]
		if c < utf8.RuneSelf {
			if c|0x20 >= 'a' && c|0x20 <= 'z' {
				return true
			}
			continue
		}
		r, n := utf8.DecodeRuneInString(w[i:])
		if unicode.IsLetter(r) {
			return true
		}
		i += n - 1
	}
	return false
}

var bullets = []string{"•", "‣", "⁃", "◦", "●", "○", "▪", "-", "*", "·"}

func (f *Filter) gopherQuality(s *scratch, text string) (Verdict, bool) {
	c := f.cfg.GopherQuality
	var nonSym, letters, alpha, stops int
	var lowbuf [32]byte
	for _, sp := range s.words {
		w := text[sp.a:sp.b]
		if hasLetter(w) {
			alpha++
		}
		t := trimPunct(w)
		if t == "" {
			continue
		}
		nonSym++
		letters += utf8.RuneCountInString(t)
		if len(t) <= len(lowbuf) && len(f.stop) > 0 {
			b := lowbuf[:len(t)]
			for i := 0; i < len(t); i++ {
				ch := t[i]
				if ch >= 'A' && ch <= 'Z' {
					ch += 'a' - 'A'
				}
				b[i] = ch
			}
			if _, ok := f.stop[string(b)]; ok {
				stops++
			}
		}
	}
	if nonSym < c.MinWords {
		return reject(StageGopherQuality, "min_words", strconv.Itoa(nonSym)+" < "+strconv.Itoa(c.MinWords)), true
	}
	if c.MaxWords > 0 && nonSym > c.MaxWords {
		return reject(StageGopherQuality, "max_words", strconv.Itoa(nonSym)+" > "+strconv.Itoa(c.MaxWords)), true
	}
	if nonSym > 0 {
		mean := float64(letters) / float64(nonSym)
		if mean < c.MinMeanWordLength {
			return reject(StageGopherQuality, "mean_word_length", ff(mean)+" < "+ff(c.MinMeanWordLength)), true
		}
		if c.MaxMeanWordLength > 0 && mean > c.MaxMeanWordLength {
			return reject(StageGopherQuality, "mean_word_length", ff(mean)+" > "+ff(c.MaxMeanWordLength)), true
		}
	}
	nw := len(s.words)
	if c.MaxSymbolWordRatio > 0 && nw > 0 {
		sym := strings.Count(text, "#") + strings.Count(text, "...") + strings.Count(text, "…")
		if v := float64(sym) / float64(nw); v > c.MaxSymbolWordRatio {
			return reject(StageGopherQuality, "symbol_word_ratio", ff(v)+" > "+ff(c.MaxSymbolWordRatio)), true
		}
	}
	if c.MaxBulletLinesFrac < 1 || c.MaxEllipsisLinesFrac < 1 {
		var nl, bul, ell int
		lines(text, func(l string) {
			l = strings.TrimSpace(l)
			if l == "" {
				return
			}
			nl++
			for _, b := range bullets {
				if strings.HasPrefix(l, b) {
					bul++
					break
				}
			}
			if strings.HasSuffix(l, "...") || strings.HasSuffix(l, "…") {
				ell++
			}
		})
		if nl > 0 {
			if v := float64(bul) / float64(nl); v > c.MaxBulletLinesFrac {
				return reject(StageGopherQuality, "bullet_lines", ff(v)+" > "+ff(c.MaxBulletLinesFrac)), true
			}
			if v := float64(ell) / float64(nl); v > c.MaxEllipsisLinesFrac {
				return reject(StageGopherQuality, "ellipsis_lines", ff(v)+" > "+ff(c.MaxEllipsisLinesFrac)), true
			}
		}
	}
	if nw > 0 {
		if v := float64(alpha) / float64(nw); v < c.MinAlphaWordsFrac {
			return reject(StageGopherQuality, "alpha_words", ff(v)+" < "+ff(c.MinAlphaWordsFrac)), true
		}
	}
	if stops < c.MinStopWords {
		return reject(StageGopherQuality, "stop_words", strconv.Itoa(stops)+" < "+strconv.Itoa(c.MinStopWords)), true
	}
	return Verdict{}, false
}

// containsFold reports whether s contains sub (lowercase ASCII) ignoring
// ASCII case.
func containsFold(s, sub string) bool {
	n := len(sub)
	if n == 0 {
		return true
	}
	first := sub[0]
	for i := 0; i+n <= len(s); i++ {
		c := s[i]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != first {
			continue
		}
		j := 1
		for ; j < n; j++ {
			d := s[i+j]
			if d >= 'A' && d <= 'Z' {
				d += 'a' - 'A'
			}
			if d != sub[j] {
				break
			}
		}
		if j == n {
			return true
		}
	}
	return false
}

var policyPhrases = []string{"terms of use", "privacy policy", "cookie policy", "uses cookies", "use of cookies", "use cookies"}

// terminal reports whether a trimmed line ends in terminal punctuation.
func terminal(l string) bool {
	if strings.HasSuffix(l, "...") || strings.HasSuffix(l, "…") {
		return false
	}
	r, _ := utf8.DecodeLastRuneInString(l)
	switch r {
	case '.', '!', '?', '"', '\'', '”', '’':
		return true
	}
	return false
}

func (f *Filter) c4(text string) (string, Verdict, bool) {
	c := f.cfg.C4
	if c.DocDropLoremIpsum && containsFold(text, "lorem ipsum") {
		return "", reject(StageC4, "lorem_ipsum", "contains \"lorem ipsum\""), true
	}
	if c.DocDropCurlyBrace && strings.IndexByte(text, '{') >= 0 {
		return "", reject(StageC4, "curly_brace", "contains \"{\""), true
	}
	var b strings.Builder
	changed := false
	kept, sentences := 0, 0
	lines(text, func(raw string) {
		l := strings.TrimSpace(raw)
		keep := l != ""
		if keep && c.LineTerminalPunct && !terminal(l) {
			keep = false
		}
		if keep && (c.LineMinWords > 0 || c.LineMaxWordLength > 0) {
			nw, long := countWords(l, c.LineMaxWordLength)
			if nw < c.LineMinWords || long {
				keep = false
			}
		}
		if keep && c.LineDropJavascript && containsFold(l, "javascript") {
			keep = false
		}
		if keep && c.LineDropPolicy {
			for _, p := range policyPhrases {
				if containsFold(l, p) {
					keep = false
					break
				}
			}
		}
		if !keep {
			changed = true
			return
		}
		if l != raw {
			changed = true
		}
		if kept > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(l)
		kept++
		if c.DocMinSentences > 0 {
			sentences += countSentences(l)
		}
	})
	if kept == 0 {
		return "", reject(StageC4, "no_lines_left", "every line failed a line rule"), true
	}
	if c.DocMinSentences > 0 && sentences < c.DocMinSentences {
		return "", reject(StageC4, "too_few_sentences", strconv.Itoa(sentences)+" < "+strconv.Itoa(c.DocMinSentences)), true
	}
	if !changed {
		return text, Verdict{}, false
	}
	return b.String(), Verdict{}, false
}

// countWords counts the space-separated words of a line and reports
// whether one is longer than maxLen bytes (maxLen 0 = no limit).
func countWords(l string, maxLen int) (n int, long bool) {
	start := -1
	for i := 0; i <= len(l); i++ {
		if i == len(l) || l[i] == ' ' || l[i] == '\t' {
			if start >= 0 {
				n++
				if maxLen > 0 && i-start > maxLen {
					long = true
				}
				start = -1
			}
		} else if start < 0 {
			start = i
		}
	}
	return n, long
}

// countSentences counts runs of . ! ? that end the line or precede a space;
// a non-empty line counts at least one sentence.
func countSentences(l string) int {
	n := 0
	for i := 0; i < len(l); i++ {
		switch l[i] {
		case '.', '!', '?':
			j := i
			for j+1 < len(l) && (l[j+1] == '.' || l[j+1] == '!' || l[j+1] == '?') {
				j++
			}
			if j+1 == len(l) || l[j+1] == ' ' || l[j+1] == '"' || l[j+1] == '\'' {
				n++
			}
			i = j
		}
	}
	if n == 0 && l != "" {
		n = 1
	}
	return n
}

func endsPunct(l string) bool {
	r, _ := utf8.DecodeLastRuneInString(l)
	switch r {
	case '.', '!', '?', '"', '\'', '”', '’', '…', ')', ':', ';':
		return true
	}
	return false
}

func (f *Filter) fineweb(s *scratch, text string) (Verdict, bool) {
	c := f.cfg.FineWeb
	var n, punct, short, dupChars int
	s.tab.reset(strings.Count(text, "\n") + 1)
	lines(text, func(l string) {
		l = strings.TrimSpace(l)
		if l == "" {
			return
		}
		n++
		if endsPunct(l) {
			punct++
		}
		if utf8.RuneCountInString(l) <= c.ShortLineChars {
			short++
		}
		if s.tab.inc(xxh3.HashString(l)) > 1 {
			dupChars += len(l)
		}
	})
	if n == 0 {
		return Verdict{}, false
	}
	if v := float64(punct) / float64(n); v < c.MinLinePunctFrac {
		return reject(StageFineWeb, "line_punct_ratio", ff(v)+" < "+ff(c.MinLinePunctFrac)), true
	}
	if v := float64(short) / float64(n); v > c.MaxShortLineFrac {
		return reject(StageFineWeb, "short_line_ratio", ff(v)+" > "+ff(c.MaxShortLineFrac)), true
	}
	if chars := len(text) - strings.Count(text, "\n"); chars > 0 {
		if v := float64(dupChars) / float64(chars); v > c.MaxDupLineCharFrac {
			return reject(StageFineWeb, "dup_line_char_ratio", ff(v)+" > "+ff(c.MaxDupLineCharFrac)), true
		}
	}
	if c.MaxNewlineWordRatio > 0 && len(s.words) > 0 {
		if v := float64(strings.Count(text, "\n")) / float64(len(s.words)); v > c.MaxNewlineWordRatio {
			return reject(StageFineWeb, "newline_word_ratio", ff(v)+" > "+ff(c.MaxNewlineWordRatio)), true
		}
	}
	return Verdict{}, false
}

// olmo finds a span of p ≤ MaxSpan words repeated MinRepeats times in a
// row: positions i with word[i] == word[i+p] forming a streak of at least
// (MinRepeats-1)·p.
func (f *Filter) olmo(s *scratch) (Verdict, bool) {
	c := f.cfg.OLMoNgram
	h := s.hashes
	for p := 1; p <= c.MaxSpan; p++ {
		need := (c.MinRepeats - 1) * p
		if len(h) < need+p {
			break
		}
		streak := 0
		for i := 0; i+p < len(h); i++ {
			if h[i] == h[i+p] {
				streak++
				if streak >= need {
					return reject(StageOLMoNgram, "repeated_ngram_run",
						fmt.Sprintf("%d-word span repeated >= %d times", p, c.MinRepeats)), true
				}
			} else {
				streak = 0
			}
		}
	}
	return Verdict{}, false
}
