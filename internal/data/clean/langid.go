package clean

import (
	"compress/flate"
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/RadhiFadlillah/whatlanggo"
)

// Und is the language code of a text in which the detector found no
// language: no letters of a script it knows, or two languages tied.
const Und = "und"

// langCodes maps whatlanggo's languages to their ISO 639-1 code, or ISO
// 639-3 where a language has no two-letter code; langByCode maps both
// codes of every language to its ISO 639-1 (else 639-3) code.
var (
	langOnce   sync.Once
	langCodes  map[whatlanggo.Lang]string
	langByCode map[string]string
)

func langTables() {
	langOnce.Do(func() {
		langCodes = make(map[whatlanggo.Lang]string, len(whatlanggo.Langs))
		langByCode = make(map[string]string, 2*len(whatlanggo.Langs))
		for l := range whatlanggo.Langs {
			c3 := l.Iso6393()
			c := l.Iso6391()
			if c == "" {
				c = c3
			}
			langCodes[l] = c
			langByCode[c], langByCode[c3] = c, c
		}
	})
}

// LangCode returns the code kestrel reports for a language name given as
// ISO 639-1 or 639-3 (case-insensitive): the ISO 639-1 code where the
// language has one, else its 639-3 code; ok is false for a language the
// detector does not know.
func LangCode(code string) (string, bool) {
	langTables()
	c, ok := langByCode[strings.ToLower(strings.TrimSpace(code))]
	return c, ok
}

// DetectLang returns the language of text as LangCode reports it (Und when
// none was found) and the detector's confidence in [0, 1]. It is
// deterministic: when the two best languages tie (confidence 0, where the
// detector's own choice follows map order) the answer is Und.
func DetectLang(text string) (string, float64) {
	langTables()
	info := whatlanggo.Detect(text)
	if info.Confidence <= 0 || info.Lang < 0 {
		return Und, 0
	}
	c, ok := langCodes[info.Lang]
	if !ok {
		return Und, 0
	}
	return c, info.Confidence
}

func (c *LangIDConfig) validate() error {
	if !c.Enabled {
		return nil
	}
	if len(c.Keep) == 0 {
		return fmt.Errorf("langid.keep is empty: list the languages to keep (e.g. [\"en\"]) or set langid.enabled = false")
	}
	for i, k := range c.Keep {
		if _, ok := LangCode(k); !ok {
			return fmt.Errorf("langid.keep[%d] = %q: not a language the detector knows (ISO 639-1 or 639-3, e.g. en, eng)", i, k)
		}
	}
	if v := c.MinConfidence; v < 0 || v > 1 || v != v {
		return fmt.Errorf("langid.min_confidence = %v: must be a fraction in [0, 1]", v)
	}
	if c.MinChars < 0 {
		return fmt.Errorf("langid.min_chars = %d: must be >= 0", c.MinChars)
	}
	if c.MaxBytes < 0 {
		return fmt.Errorf("langid.max_bytes = %d: must be >= 0", c.MaxBytes)
	}
	return nil
}

// keepSet returns the kept languages as LangCode reports them (validated).
func (c *LangIDConfig) keepSet() map[string]bool {
	m := make(map[string]bool, len(c.Keep))
	for _, k := range c.Keep {
		code, _ := LangCode(k)
		m[code] = true
	}
	return m
}

// atLeastChars reports whether text has at least n characters, reading no
// further than needed.
func atLeastChars(text string, n int) bool {
	if len(text) < n {
		return false // a character is at least one byte
	}
	if len(text) >= n*utf8.UTFMax {
		return true
	}
	return utf8.RuneCountInString(text) >= n
}

// head returns text cut to at most max bytes at a character boundary (max
// 0 = all).
func head(text string, max int) string {
	if max <= 0 || len(text) <= max {
		return text
	}
	i := max
	for i > 0 && !utf8.RuneStart(text[i]) {
		i--
	}
	return text[:i]
}

// langID rejects a document whose language is not kept (rule: the
// detected language's code, or Und) or whose kept language was detected
// with too little confidence (rule low_confidence). Documents shorter than
// MinChars are not judged.
func (f *Filter) langID(text string) (Verdict, bool) {
	c := &f.cfg.LangID
	if !atLeastChars(text, c.MinChars) {
		return Verdict{}, false
	}
	lang, conf := DetectLang(head(text, c.MaxBytes))
	if !f.keepLang[lang] {
		return reject(StageLangID, lang, fmt.Sprintf("%s %.2f, keep %s", lang, conf, strings.Join(c.Keep, ","))), true
	}
	if conf < c.MinConfidence {
		return reject(StageLangID, "low_confidence", fmt.Sprintf("%s %.2f < %v", lang, conf, ff(c.MinConfidence))), true
	}
	return Verdict{}, false
}

// countWriter counts the bytes written to it.
type countWriter struct{ n int }

func (w *countWriter) Write(p []byte) (int, error) { w.n += len(p); return len(p), nil }

// CompressionLevel is the compress/flate level of the compression-ratio
// rule: fixed, so a ratio is a pure function of the text (and the Go
// release, which the prepare fingerprint records).
const CompressionLevel = 6

// CompressionRatio returns compressed/raw bytes of text under
// compress/flate at CompressionLevel (0 for an empty text).
func CompressionRatio(text string) float64 {
	var s scratch
	return s.compressionRatio(text)
}

// compressionRatio is CompressionRatio with the scratch's writer and
// buffer, reused across calls.
func (s *scratch) compressionRatio(text string) float64 {
	if len(text) == 0 {
		return 0
	}
	var cw countWriter
	if s.zw == nil {
		s.zw, _ = flate.NewWriter(&cw, CompressionLevel) // the level is valid
		s.zbuf = make([]byte, 16<<10)
	} else {
		s.zw.Reset(&cw)
	}
	// A countWriter never fails, so neither does the flate writer over it.
	for rest := text; len(rest) > 0; {
		n := copy(s.zbuf, rest)
		_, _ = s.zw.Write(s.zbuf[:n])
		rest = rest[n:]
	}
	_ = s.zw.Close()
	return float64(cw.n) / float64(len(text))
}

// compression rejects a document of at least MinBytes whose compression
// ratio is below MinRatio.
func (f *Filter) compression(s *scratch, text string) (Verdict, bool) {
	c := f.cfg.Compression
	if len(text) < c.MinBytes {
		return Verdict{}, false
	}
	if r := s.compressionRatio(text); r < c.MinRatio {
		return reject(StageCompression, "ratio", fmt.Sprintf("%s < %s", ff(r), ff(c.MinRatio))), true
	}
	return Verdict{}, false
}
