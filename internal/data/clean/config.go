// Package clean holds the document quality filters of `kestrel prepare`:
// language identification (whatlanggo's trigram profiles, as FineWeb keeps
// English by a language-ID score), Gopher quality and repetition (Rae et
// al. 2021, as in DataTrove), a compression-ratio rule, C4's line and
// document rules, FineWeb's quality rules and OLMo 2's repeated n-gram
// rule. Every rejected document carries a stage, a rule name and a
// detail such as "2.1 < 3".
//
// Tokens: words are whitespace-separated fields of the text (no language
// tokenizer). For word lengths, stop words and the alphabetic test a word's
// leading and trailing punctuation is trimmed first; a word made only of
// punctuation is a "symbol word" and does not count toward the word count or
// the mean word length. Lines are split on "\n"; blank lines are ignored by
// the per-line ratios unless a rule says otherwise.
package clean

import (
	"fmt"
	"strings"
)

// Config selects the filter families and their thresholds. A threshold is
// switched off by its neutral value: 0 for a minimum, 1 for a maximum
// fraction, 0 for an unbounded maximum (max_words, max_mean_word_length,
// max_symbol_word_ratio, max_newline_word_ratio).
type Config struct {
	LangID           LangIDConfig           `toml:"langid" comment:"language identification (whatlanggo trigram profiles, 84 languages): keep documents in the listed languages; rejects are counted per detected language (clean/langid/fr …)"`
	Compression      CompressionConfig      `toml:"compression" comment:"compression-ratio rule: repetitive boilerplate compresses far better than prose (compress/flate level 6)"`
	GopherQuality    GopherQualityConfig    `toml:"gopher_quality" comment:"Gopher quality rules (Rae et al. 2021)"`
	GopherRepetition GopherRepetitionConfig `toml:"gopher_repetition" comment:"Gopher repetition rules: duplicate lines, paragraphs and n-grams"`
	C4               C4Config               `toml:"c4" comment:"C4 rules; the line rules remove lines, the document rules drop the document"`
	FineWeb          FineWebConfig          `toml:"fineweb" comment:"FineWeb quality rules"`
	OLMoNgram        OLMoNgramConfig        `toml:"olmo_ngram" comment:"OLMo 2 repeated n-gram rule"`
}

// LangIDConfig holds the language-identification rule.
type LangIDConfig struct {
	Enabled       bool     `toml:"enabled" comment:"reject documents whose detected language is not in keep"`
	Keep          []string `toml:"keep" comment:"languages to keep, ISO 639-1 (en, de …) or ISO 639-3 codes (eng, deu …)"`
	MinConfidence float64  `toml:"min_confidence" comment:"reject a document in a kept language when the detector's confidence (0..1, top language against the runner-up) is below this"`
	MinChars      int      `toml:"min_chars" comment:"documents with fewer characters are not judged (kept): the detector is unreliable on short text"`
	MaxBytes      int      `toml:"max_bytes" comment:"judge at most the first this many bytes of a document (0 = all; the detector runs at ~2 MB/s)"`
}

// CompressionConfig holds the compression-ratio rule.
type CompressionConfig struct {
	Enabled  bool    `toml:"enabled" comment:"reject documents that compress too well"`
	MinRatio float64 `toml:"min_ratio" comment:"reject when compressed/raw bytes (compress/flate, level 6) is below this; prose on the shipped data is >= 0.30"`
	MinBytes int     `toml:"min_bytes" comment:"documents with fewer bytes are not judged (kept): deflate's overhead dominates short texts"`
}

// GopherQualityConfig holds the Gopher quality thresholds.
type GopherQualityConfig struct {
	Enabled              bool     `toml:"enabled" comment:"apply the Gopher quality rules"`
	MinWords             int      `toml:"min_words" comment:"reject documents with fewer non-symbol words"`
	MaxWords             int      `toml:"max_words" comment:"reject documents with more non-symbol words (0 = no limit)"`
	MinMeanWordLength    float64  `toml:"min_mean_word_length" comment:"reject when the mean word length (characters, punctuation trimmed) is below this"`
	MaxMeanWordLength    float64  `toml:"max_mean_word_length" comment:"reject when the mean word length is above this (0 = no limit)"`
	MaxSymbolWordRatio   float64  `toml:"max_symbol_word_ratio" comment:"reject when (count of '#' + '...' + '…') / words is above this (0 = off)"`
	MaxBulletLinesFrac   float64  `toml:"max_bullet_lines_frac" comment:"reject when more than this fraction of non-blank lines start with a bullet (• ‣ ⁃ ◦ ● ○ ▪ - *)"`
	MaxEllipsisLinesFrac float64  `toml:"max_ellipsis_lines_frac" comment:"reject when more than this fraction of non-blank lines end with '...' or '…'"`
	MinAlphaWordsFrac    float64  `toml:"min_alpha_words_frac" comment:"reject when fewer than this fraction of words contain a letter"`
	MinStopWords         int      `toml:"min_stop_words" comment:"reject when fewer stop words occur (counting repeats)"`
	StopWords            []string `toml:"stop_words" comment:"stop word list (matched case-insensitively)"`
}

// GopherRepetitionConfig holds the Gopher repetition thresholds.
type GopherRepetitionConfig struct {
	Enabled            bool      `toml:"enabled" comment:"apply the Gopher repetition rules"`
	MaxDupLineFrac     float64   `toml:"max_dup_line_frac" comment:"reject when more than this fraction of lines repeat an earlier line"`
	MaxDupLineCharFrac float64   `toml:"max_dup_line_char_frac" comment:"reject when repeated lines hold more than this fraction of the characters"`
	MaxDupParaFrac     float64   `toml:"max_dup_para_frac" comment:"reject when more than this fraction of paragraphs (split on blank lines) repeat an earlier one"`
	MaxDupParaCharFrac float64   `toml:"max_dup_para_char_frac" comment:"reject when repeated paragraphs hold more than this fraction of the characters"`
	TopNgramSizes      []int     `toml:"top_ngram_sizes" comment:"n of the most-frequent-n-gram rules"`
	TopNgramMaxFrac    []float64 `toml:"top_ngram_max_frac" comment:"per top_ngram_sizes entry: reject when the most frequent n-gram covers more than this fraction of the characters"`
	DupNgramSizes      []int     `toml:"dup_ngram_sizes" comment:"n of the duplicate-n-gram rules"`
	DupNgramMaxFrac    []float64 `toml:"dup_ngram_max_frac" comment:"per dup_ngram_sizes entry: reject when repeated n-grams cover more than this fraction of the characters"`
}

// C4Config holds the C4 rules.
type C4Config struct {
	Enabled            bool `toml:"enabled" comment:"apply the C4 rules (this rewrites the text: lines failing a line rule are removed)"`
	LineTerminalPunct  bool `toml:"line_terminal_punct" comment:"remove lines not ending in . ! ? \" ' (or their curly forms); lines ending in an ellipsis are removed too"`
	LineMinWords       int  `toml:"line_min_words" comment:"remove lines with fewer words (0 = off)"`
	LineMaxWordLength  int  `toml:"line_max_word_length" comment:"remove lines containing a word longer than this many bytes (0 = off)"`
	LineDropJavascript bool `toml:"line_drop_javascript" comment:"remove lines containing 'javascript'"`
	LineDropPolicy     bool `toml:"line_drop_policy" comment:"remove lines containing policy boilerplate (terms of use, privacy policy, cookie policy, uses cookies, use of cookies, use cookies)"`
	DocDropLoremIpsum  bool `toml:"doc_drop_lorem_ipsum" comment:"drop documents containing 'lorem ipsum'"`
	DocDropCurlyBrace  bool `toml:"doc_drop_curly_brace" comment:"drop documents containing '{' (on for web, off for code)"`
	DocMinSentences    int  `toml:"doc_min_sentences" comment:"drop documents with fewer sentences left after the line rules (0 = off; C4 used 5)"`
}

// FineWebConfig holds FineWeb's quality thresholds.
type FineWebConfig struct {
	Enabled             bool    `toml:"enabled" comment:"apply the FineWeb quality rules"`
	MinLinePunctFrac    float64 `toml:"min_line_punct_frac" comment:"reject when fewer than this fraction of non-blank lines end in punctuation"`
	ShortLineChars      int     `toml:"short_line_chars" comment:"a line with at most this many characters is short"`
	MaxShortLineFrac    float64 `toml:"max_short_line_frac" comment:"reject when more than this fraction of non-blank lines are short"`
	MaxDupLineCharFrac  float64 `toml:"max_dup_line_char_frac" comment:"reject when repeated lines hold more than this fraction of the non-newline characters"`
	MaxNewlineWordRatio float64 `toml:"max_newline_word_ratio" comment:"reject when newlines / words is above this (0 = off)"`
}

// OLMoNgramConfig holds OLMo 2's repeated n-gram rule.
type OLMoNgramConfig struct {
	Enabled    bool `toml:"enabled" comment:"drop documents with a long run of a repeated short span"`
	MaxSpan    int  `toml:"max_span" comment:"longest repeated span considered, in words"`
	MinRepeats int  `toml:"min_repeats" comment:"drop when a span of 1..max_span words repeats this many times in a row"`
}

// Kinds lists the source kinds DefaultConfig knows.
var Kinds = []string{"web", "code", "math", "books"}

// DefaultConfig returns the filter set for a source kind: "web" (every
// family on, public thresholds; language ID keeps English), "books"
// (language ID, compression ratio, Gopher quality and repetition, OLMo; no
// C4/FineWeb line rules, which destroy verse and dialogue; no word limit),
// "code" (only OLMo's repeated n-gram rule and Gopher's max words: code is
// brace-heavy, has short lines and repeated lines by nature, and compresses
// to 0.06–0.4), and "math" (lenient Gopher quality, repetition and OLMo; no
// language ID — short, formula-heavy text, where whatlanggo named 49 of
// 7,473 GSM8K documents non-English —, no compression ratio, no
// C4/FineWeb). Any other kind gets the "web" set.
func DefaultConfig(kind string) Config {
	c := Config{
		LangID:      LangIDConfig{Enabled: true, Keep: []string{"en"}, MinConfidence: 0.5, MinChars: 200, MaxBytes: 4096},
		Compression: CompressionConfig{Enabled: true, MinRatio: 0.2, MinBytes: 1024},
		GopherQuality: GopherQualityConfig{
			Enabled: true, MinWords: 50, MaxWords: 100000,
			MinMeanWordLength: 3, MaxMeanWordLength: 10,
			MaxSymbolWordRatio: 0.1, MaxBulletLinesFrac: 0.9, MaxEllipsisLinesFrac: 0.3,
			MinAlphaWordsFrac: 0.8, MinStopWords: 2,
			StopWords: []string{"the", "be", "to", "of", "and", "that", "have", "with"},
		},
		GopherRepetition: GopherRepetitionConfig{
			Enabled:        true,
			MaxDupLineFrac: 0.3, MaxDupLineCharFrac: 0.2, MaxDupParaFrac: 0.3, MaxDupParaCharFrac: 0.2,
			TopNgramSizes: []int{2, 3, 4}, TopNgramMaxFrac: []float64{0.20, 0.18, 0.16},
			DupNgramSizes:   []int{5, 6, 7, 8, 9, 10},
			DupNgramMaxFrac: []float64{0.15, 0.14, 0.13, 0.12, 0.11, 0.10},
		},
		C4: C4Config{
			Enabled: true, LineTerminalPunct: true, LineMinWords: 3, LineMaxWordLength: 1000,
			LineDropJavascript: true, LineDropPolicy: true, DocDropLoremIpsum: true, DocDropCurlyBrace: true,
		},
		FineWeb: FineWebConfig{
			Enabled: true, MinLinePunctFrac: 0.12, ShortLineChars: 30, MaxShortLineFrac: 0.67,
			MaxDupLineCharFrac: 0.01, MaxNewlineWordRatio: 0.3,
		},
		OLMoNgram: OLMoNgramConfig{Enabled: true, MaxSpan: 13, MinRepeats: 32},
	}
	switch kind {
	case "books":
		c.GopherQuality.MaxWords = 0
		c.C4.Enabled = false
		c.FineWeb.Enabled = false
	case "code":
		c.LangID.Enabled = false
		c.Compression.Enabled = false
		c.GopherQuality = GopherQualityConfig{Enabled: true, MaxWords: 100000,
			MaxBulletLinesFrac: 1, MaxEllipsisLinesFrac: 1, StopWords: c.GopherQuality.StopWords}
		c.GopherRepetition.Enabled = false
		c.C4.Enabled = false
		c.C4.DocDropCurlyBrace = false
		c.C4.LineTerminalPunct = false
		c.FineWeb.Enabled = false
	case "math":
		c.LangID.Enabled = false
		c.Compression.Enabled = false
		c.GopherQuality.MinWords = 10
		c.GopherQuality.MinMeanWordLength = 1.5
		c.GopherQuality.MaxMeanWordLength = 15
		c.GopherQuality.MaxSymbolWordRatio = 0.5
		c.GopherQuality.MinAlphaWordsFrac = 0.4
		c.GopherQuality.MinStopWords = 0
		c.GopherRepetition.MaxDupLineFrac = 0.5
		c.GopherRepetition.MaxDupLineCharFrac = 0.4
		c.GopherRepetition.TopNgramMaxFrac = []float64{0.30, 0.27, 0.24}
		c.GopherRepetition.DupNgramMaxFrac = []float64{0.30, 0.28, 0.26, 0.24, 0.22, 0.20}
		c.C4.Enabled = false
		c.C4.DocDropCurlyBrace = false
		c.FineWeb.Enabled = false
	}
	return c
}

// validate checks every threshold and names the offending field.
func (c *Config) validate() error {
	frac := func(name string, v float64) error {
		if v < 0 || v > 1 || v != v {
			return fmt.Errorf("%s = %v: must be a fraction in [0, 1]", name, v)
		}
		return nil
	}
	nonneg := func(name string, v float64) error {
		if v < 0 || v != v {
			return fmt.Errorf("%s = %v: must be >= 0", name, v)
		}
		return nil
	}
	if err := c.LangID.validate(); err != nil {
		return err
	}
	if p := c.Compression; p.Enabled {
		if err := frac("compression.min_ratio", p.MinRatio); err != nil {
			return err
		}
		if p.MinBytes < 0 {
			return fmt.Errorf("compression.min_bytes = %d: must be >= 0", p.MinBytes)
		}
	}
	q := c.GopherQuality
	if q.Enabled {
		for _, e := range []error{
			nonneg("gopher_quality.min_words", float64(q.MinWords)),
			nonneg("gopher_quality.max_words", float64(q.MaxWords)),
			nonneg("gopher_quality.min_mean_word_length", q.MinMeanWordLength),
			nonneg("gopher_quality.max_mean_word_length", q.MaxMeanWordLength),
			nonneg("gopher_quality.max_symbol_word_ratio", q.MaxSymbolWordRatio),
			frac("gopher_quality.max_bullet_lines_frac", q.MaxBulletLinesFrac),
			frac("gopher_quality.max_ellipsis_lines_frac", q.MaxEllipsisLinesFrac),
			frac("gopher_quality.min_alpha_words_frac", q.MinAlphaWordsFrac),
			nonneg("gopher_quality.min_stop_words", float64(q.MinStopWords)),
		} {
			if e != nil {
				return e
			}
		}
		if q.MaxWords > 0 && q.MinWords > q.MaxWords {
			return fmt.Errorf("gopher_quality.min_words = %d > max_words = %d", q.MinWords, q.MaxWords)
		}
		if q.MaxMeanWordLength > 0 && q.MinMeanWordLength > q.MaxMeanWordLength {
			return fmt.Errorf("gopher_quality.min_mean_word_length = %v > max_mean_word_length = %v", q.MinMeanWordLength, q.MaxMeanWordLength)
		}
		if q.MinStopWords > 0 && len(q.StopWords) == 0 {
			return fmt.Errorf("gopher_quality.stop_words is empty but min_stop_words = %d", q.MinStopWords)
		}
	}
	r := c.GopherRepetition
	if r.Enabled {
		for _, e := range []error{
			frac("gopher_repetition.max_dup_line_frac", r.MaxDupLineFrac),
			frac("gopher_repetition.max_dup_line_char_frac", r.MaxDupLineCharFrac),
			frac("gopher_repetition.max_dup_para_frac", r.MaxDupParaFrac),
			frac("gopher_repetition.max_dup_para_char_frac", r.MaxDupParaCharFrac),
		} {
			if e != nil {
				return e
			}
		}
		if err := sizesFracs("gopher_repetition.top_ngram", r.TopNgramSizes, r.TopNgramMaxFrac); err != nil {
			return err
		}
		if err := sizesFracs("gopher_repetition.dup_ngram", r.DupNgramSizes, r.DupNgramMaxFrac); err != nil {
			return err
		}
	}
	c4 := c.C4
	if c4.Enabled {
		if c4.LineMinWords < 0 {
			return fmt.Errorf("c4.line_min_words = %d: must be >= 0", c4.LineMinWords)
		}
		if c4.LineMaxWordLength < 0 {
			return fmt.Errorf("c4.line_max_word_length = %d: must be >= 0", c4.LineMaxWordLength)
		}
		if c4.DocMinSentences < 0 {
			return fmt.Errorf("c4.doc_min_sentences = %d: must be >= 0", c4.DocMinSentences)
		}
	}
	f := c.FineWeb
	if f.Enabled {
		for _, e := range []error{
			frac("fineweb.min_line_punct_frac", f.MinLinePunctFrac),
			nonneg("fineweb.short_line_chars", float64(f.ShortLineChars)),
			frac("fineweb.max_short_line_frac", f.MaxShortLineFrac),
			frac("fineweb.max_dup_line_char_frac", f.MaxDupLineCharFrac),
			nonneg("fineweb.max_newline_word_ratio", f.MaxNewlineWordRatio),
		} {
			if e != nil {
				return e
			}
		}
	}
	o := c.OLMoNgram
	if o.Enabled {
		if o.MaxSpan < 1 || o.MaxSpan > 64 {
			return fmt.Errorf("olmo_ngram.max_span = %d: must be in [1, 64]", o.MaxSpan)
		}
		if o.MinRepeats < 2 {
			return fmt.Errorf("olmo_ngram.min_repeats = %d: must be >= 2", o.MinRepeats)
		}
	}
	return nil
}

func sizesFracs(prefix string, sizes []int, fracs []float64) error {
	if len(sizes) != len(fracs) {
		return fmt.Errorf("%s_sizes has %d entries but %s_max_frac has %d", prefix, len(sizes), prefix, len(fracs))
	}
	for i, n := range sizes {
		if n < 1 || n > 64 {
			return fmt.Errorf("%s_sizes[%d] = %d: must be in [1, 64]", prefix, i, n)
		}
		if v := fracs[i]; v < 0 || v > 1 || v != v {
			return fmt.Errorf("%s_max_frac[%d] = %v: must be a fraction in [0, 1]", prefix, i, v)
		}
	}
	return nil
}

// lowerWords returns the stop words lowercased.
func lowerWords(ws []string) map[string]struct{} {
	m := make(map[string]struct{}, len(ws))
	for _, w := range ws {
		m[strings.ToLower(w)] = struct{}{}
	}
	return m
}
