package clean

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/datadir"
)

// vocab is a pool of distinct 5-letter words, so generated texts have no
// accidental repetition.
func vocab(n int) []string {
	out := make([]string, n)
	for i := range out {
		b := []byte("aaaaa")
		x := i
		for j := 4; j >= 0; j-- {
			b[j] = byte('a' + x%26)
			x /= 26
		}
		out[i] = "w" + string(b[1:]) // 5 letters, never a stop word
	}
	return out
}

// prose returns n distinct words in sentences of 10 words, with two stop
// words at the start, one sentence per line.
func prose(n int, off int) string {
	v := vocab(off + n)[off:]
	var b strings.Builder
	for i, w := range v {
		switch {
		case i == 0:
			w = "the"
		case i == 1:
			w = "and"
		}
		b.WriteString(w)
		if i%10 == 9 || i == n-1 {
			b.WriteString(".\n")
		} else {
			b.WriteByte(' ')
		}
	}
	return b.String()
}

func only(t *testing.T, mod func(c *Config)) *Filter {
	t.Helper()
	c := DefaultConfig("web")
	c.LangID.Enabled = false
	c.Compression.Enabled = false
	c.GopherQuality.Enabled = false
	c.GopherRepetition.Enabled = false
	c.C4.Enabled = false
	c.FineWeb.Enabled = false
	c.OLMoNgram.Enabled = false
	mod(&c)
	f, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// replaceWords replaces the last k words of text with w.
func replaceWords(text string, k int, w string) string {
	fs := strings.Fields(text)
	for i := 0; i < k; i++ {
		fs[len(fs)-1-i] = w
	}
	return strings.Join(fs, " ")
}

func linesDoc(n int, fn func(i int) string) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		b.WriteString(fn(i))
		b.WriteByte('\n')
	}
	return b.String()
}

type thrCase struct {
	name string
	text string
	rule string // "" = keep
}

func runCases(t *testing.T, f *Filter, stage string, cases []thrCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := f.Check(tc.text)
			if tc.rule == "" {
				if !v.Keep {
					t.Fatalf("want keep, got %s (%s)", v.Key(), v.Detail)
				}
				return
			}
			if v.Keep || v.Stage != stage || v.Rule != tc.rule {
				t.Fatalf("want reject %s/%s, got keep=%v %s (%s)", stage, tc.rule, v.Keep, v.Key(), v.Detail)
			}
			if v.Detail == "" {
				t.Fatal("empty detail")
			}
		})
	}
}

func TestGopherQualityThresholds(t *testing.T) {
	f := only(t, func(c *Config) { c.GopherQuality.Enabled = true })
	// 6-letter words ("wxxxxx" + "."): mean length 5 within [3,10].
	words := func(n int, w string) string {
		return "the and " + strings.TrimSpace(strings.Repeat(w+" ", n-2))
	}
	bulleted := func(nb, n int) string {
		return linesDoc(n, func(i int) string {
			s := "the and wordy wordy wordy wordy wordy wordy wordy wordy."
			if i < nb {
				s = "- " + s
			}
			return s
		})
	}
	ellipsis := func(ne, n int) string {
		return linesDoc(n, func(i int) string {
			s := "the and wordy wordy wordy wordy wordy wordy wordy wordy"
			if i < ne {
				return s + "…"
			}
			return s + "."
		})
	}
	cases := []thrCase{
		{"min_words_in", words(50, "wordy"), ""},
		{"min_words_out", words(49, "wordy"), "min_words"},
		{"max_words_in", words(100000, "wordy"), ""},
		{"max_words_out", words(100001, "wordy"), "max_words"},
		// mean length: 48 words of length L plus "the"(3) "and"(3).
		{"mean_len_low_in", words(50, "abc"), ""},
		{"mean_len_low_out", words(50, "ab"), "mean_word_length"},
		{"mean_len_high_in", words(50, "abcdefghij"), ""},
		{"mean_len_high_out", words(50, "abcdefghijkl"), "mean_word_length"},
		// 100 words, 10 of them '#x' → ratio 0.1 (kept), 11 → 0.11.
		{"symbol_in", replaceWords(words(100, "wordy"), 10, "#wordy"), ""},
		{"symbol_out", replaceWords(words(100, "wordy"), 11, "#wordy"), "symbol_word_ratio"},
		{"bullet_in", bulleted(9, 10), ""},
		{"bullet_out", bulleted(10, 10), "bullet_lines"},
		{"ellipsis_in", ellipsis(3, 10), ""},
		{"ellipsis_out", ellipsis(4, 10), "ellipsis_lines"},
		// 100 words, 20 of them digits → alpha fraction 0.8 (kept), 21 → 0.79.
		{"alpha_in", replaceWords(words(100, "wordy"), 20, "12345"), ""},
		{"alpha_out", replaceWords(words(100, "wordy"), 21, "12345"), "alpha_words"},
		{"stop_in", "The " + words(50, "wordy")[8:] + " of", ""},
		{"stop_out", "The " + words(50, "wordy")[8:] + " wordy", "stop_words"},
	}
	runCases(t, f, StageGopherQuality, cases)
}

func TestGopherRepetitionThresholds(t *testing.T) {
	f := only(t, func(c *Config) { c.GopherRepetition.Enabled = true })
	v := vocab(5000)
	// distinctLines: n lines of 5 distinct words each, lines [0,d) repeat line 0... use
	// lines i and repeat the first line d times.
	dupLines := func(n, d int, sep string) string {
		var parts []string
		for i := 0; i < n; i++ {
			k := i
			if i >= n-d {
				k = 0
			}
			parts = append(parts, strings.Join(v[k*5:k*5+5], " "))
		}
		return strings.Join(parts, sep)
	}
	// 10 lines, 3 duplicates → 0.3 kept; 4 → 0.4 rejected. Line char share
	// for 3 dup lines: 3*29/(10*29+9) ≈ 0.29 > 0.2, so relax it here.
	noNgram := func(c *Config) {
		c.GopherRepetition.TopNgramMaxFrac = []float64{1, 1, 1}
		c.GopherRepetition.DupNgramMaxFrac = []float64{1, 1, 1, 1, 1, 1}
	}
	fl := only(t, func(c *Config) {
		c.GopherRepetition.Enabled = true
		c.GopherRepetition.MaxDupLineCharFrac = 1
		c.GopherRepetition.MaxDupParaCharFrac = 1
		noNgram(c)
	})
	runCases(t, fl, StageGopherRepetition, []thrCase{
		{"dup_line_in", dupLines(10, 3, "\n"), ""},
		{"dup_line_out", dupLines(10, 4, "\n"), "dup_line_frac"},
		{"dup_para_in", dupLines(10, 3, "\n\n"), ""},
		{"dup_para_out", dupLines(10, 4, "\n\n"), "dup_line_frac"}, // lines are checked first
	})
	fp := only(t, func(c *Config) {
		c.GopherRepetition.Enabled = true
		c.GopherRepetition.MaxDupLineFrac = 1
		c.GopherRepetition.MaxDupLineCharFrac = 1
		c.GopherRepetition.MaxDupParaCharFrac = 1
		noNgram(c)
	})
	runCases(t, fp, StageGopherRepetition, []thrCase{
		{"dup_para_in", dupLines(10, 3, "\n\n"), ""},
		{"dup_para_out", dupLines(10, 4, "\n\n"), "dup_para_frac"},
	})
	// Char fractions: 20 lines of 29 chars (+newlines = 599 chars); 4
	// duplicates hold 116 chars = 0.194 (kept), 5 hold 145 = 0.242.
	fc := only(t, func(c *Config) {
		c.GopherRepetition.Enabled = true
		c.GopherRepetition.MaxDupLineFrac = 1
		c.GopherRepetition.MaxDupParaFrac = 1
		noNgram(c)
	})
	runCases(t, fc, StageGopherRepetition, []thrCase{
		{"dup_line_char_in", dupLines(20, 4, "\n"), ""},
		{"dup_line_char_out", dupLines(20, 5, "\n"), "dup_line_char_frac"},
	})
	fpc := only(t, func(c *Config) {
		c.GopherRepetition.Enabled = true
		c.GopherRepetition.MaxDupLineFrac = 1
		c.GopherRepetition.MaxDupLineCharFrac = 1
		c.GopherRepetition.MaxDupParaFrac = 1
		noNgram(c)
	})
	// 20 paragraphs: 29*20 + 2*19 = 618 chars; 4 dups = 116 → 0.188; 5 = 145 → 0.235.
	runCases(t, fpc, StageGopherRepetition, []thrCase{
		{"dup_para_char_in", dupLines(20, 4, "\n\n"), ""},
		{"dup_para_char_out", dupLines(20, 5, "\n\n"), "dup_para_char_frac"},
	})

	// Top 2-gram: "xx yy" (5 chars) repeated r times inside distinct 5-letter
	// words. Text = r*"xx yy " + m distinct words. Share = 5r/len.
	top := func(gram string, r, m int) string {
		return strings.Repeat(gram+" ", r) + strings.Join(v[:m], " ")
	}
	// gram "ab cd": 5 chars. r=20 → 100; len = 120 + 6m-1. For share 0.2
	// we need len 500 → m = 63.5: m=64 gives 100/503 = 0.199 (in), m=63 gives 100/497 = 0.201 (out).
	ft := only(t, func(c *Config) {
		c.GopherRepetition.Enabled = true
		c.GopherRepetition.DupNgramMaxFrac = []float64{1, 1, 1, 1, 1, 1}
		c.GopherRepetition.TopNgramMaxFrac = []float64{0.20, 1, 1}
	})
	runCases(t, ft, StageGopherRepetition, []thrCase{
		{"top_2gram_in", top("ab cd", 20, 64), ""},
		{"top_2gram_out", top("ab cd", 20, 63), "top_2gram"},
	})
	// Top 3-gram "ab cd ef" (8 chars), counted 10 times (alternating with distinct words so 2-grams stay small):
	tri := func(m int) string {
		var parts []string
		for i := 0; i < 10; i++ {
			parts = append(parts, "ab cd ef", v[1000+i])
		}
		return strings.Join(parts, " ") + " " + strings.Join(v[:m], " ")
	}
	// len = 10*8 + 10*5 + 19 (spaces) + 1 + 6m-1 = 149 + 6m; share = 80/len ≤ 0.18 ⇔ len ≥ 444.4 ⇔ m ≥ 49.2.
	f3 := only(t, func(c *Config) {
		c.GopherRepetition.Enabled = true
		c.GopherRepetition.DupNgramMaxFrac = []float64{1, 1, 1, 1, 1, 1}
		c.GopherRepetition.TopNgramMaxFrac = []float64{1, 0.18, 1}
	})
	runCases(t, f3, StageGopherRepetition, []thrCase{
		{"top_3gram_in", tri(50), ""},
		{"top_3gram_out", tri(49), "top_3gram"},
	})
	// Duplicate 5-grams: a 5-gram of 5-letter words (25 chars w/o spaces)
	// repeated k extra times; share = 25k/len.
	dup5 := func(k, m int) string {
		var parts []string
		for i := 0; i <= k; i++ {
			parts = append(parts, strings.Join(v[2000:2005], " "), v[3000+i])
		}
		return strings.Join(parts, " ") + " " + strings.Join(v[:m], " ")
	}
	// k=3: text = 4*(29+1+5+1) + 6m - 1 = 143+6m; rep chars 75; ≤ 0.15 ⇔ len ≥ 500 ⇔ m ≥ 59.5.
	f5 := only(t, func(c *Config) {
		c.GopherRepetition.Enabled = true
		c.GopherRepetition.TopNgramMaxFrac = []float64{1, 1, 1}
		c.GopherRepetition.DupNgramMaxFrac = []float64{0.15, 1, 1, 1, 1, 1}
	})
	runCases(t, f5, StageGopherRepetition, []thrCase{
		{"dup_5gram_in", dup5(3, 60), ""},
		{"dup_5gram_out", dup5(3, 59), "dup_5gram"},
	})
	// Defaults on plain distinct prose keep.
	runCases(t, f, StageGopherRepetition, []thrCase{{"distinct_prose", prose(300, 0), ""}})
}

func TestC4Rules(t *testing.T) {
	f := only(t, func(c *Config) { c.C4.Enabled = true })
	good := "The cat sat on the mat.\nIt was a sunny day!\nWho knew?\n"
	runCases(t, f, StageC4, []thrCase{
		{"keep", good, ""},
		{"lorem", good + "Lorem Ipsum dolor sit amet.\n", "lorem_ipsum"},
		{"curly", good + "x = {a: 1} is here.\n", "curly_brace"},
		{"nothing_left", "Home\nAbout us\nContact\n", "no_lines_left"},
	})
	cases := []struct {
		name, in, want string
	}{
		{"terminal_punct", "Three words here.\nthree words here\n", "Three words here."},
		{"min_words", "Three words here.\nTwo words.\n", "Three words here."},
		{"javascript", "Three words here.\nPlease enable JavaScript to continue.\n", "Three words here."},
		{"policy", "Three words here.\nRead our Privacy Policy today.\nThis site uses cookies for you.\n", "Three words here."},
		{"ellipsis", "Three words here.\nAnd then it went...\n", "Three words here."},
		{"quote_end", "He said \"go home.\"\n", "He said \"go home.\"\n"},
		{"trim", "  Three words here.  \n", "Three words here."},
	}
	for _, tc := range cases {
		got, v := f.Apply(tc.in)
		if !v.Keep || got != tc.want {
			t.Errorf("%s: Apply = %q, %+v; want %q", tc.name, got, v, tc.want)
		}
	}
	// Curly brace off (code default) keeps the brace.
	fc := only(t, func(c *Config) { c.C4.Enabled = true; c.C4.DocDropCurlyBrace = false })
	if _, v := fc.Apply(good + "x = {a: 1} is here.\n"); !v.Keep {
		t.Errorf("curly off: %+v", v)
	}
	// Minimum sentences: 5 in, 4 out.
	fs := only(t, func(c *Config) { c.C4.Enabled = true; c.C4.DocMinSentences = 5 })
	runCases(t, fs, StageC4, []thrCase{
		{"sentences_in", "One two three. Four five six.\nSeven eight nine. Ten eleven twelve! Yes it is?\n", ""},
		{"sentences_out", "One two three. Four five six.\nSeven eight nine. Ten eleven twelve!\n", "too_few_sentences"},
	})
	// Unchanged text is returned as is (no copy).
	if got, _ := f.Apply("A b c.\nD e f."); got != "A b c.\nD e f." {
		t.Errorf("unchanged text modified: %q", got)
	}
}

func TestFineWebThresholds(t *testing.T) {
	line := func(i int, end string) string { // distinct 35+ char line
		v := vocab(1000)
		return strings.Join(v[i*6:i*6+6], " ") + end
	}
	relax := func(mod func(c *FineWebConfig)) *Filter {
		return only(t, func(c *Config) {
			c.FineWeb = FineWebConfig{Enabled: true, ShortLineChars: 30, MaxShortLineFrac: 1, MaxDupLineCharFrac: 1}
			mod(&c.FineWeb)
		})
	}
	fp := relax(func(c *FineWebConfig) { c.MinLinePunctFrac = 0.12 })
	punct := func(k, n int) string {
		return linesDoc(n, func(i int) string {
			if i < k {
				return line(i, ".")
			}
			return line(i, "")
		})
	}
	// 25 lines: 3 → 0.12 kept, 2 → 0.08 rejected.
	runCases(t, fp, StageFineWeb, []thrCase{
		{"punct_in", punct(3, 25), ""},
		{"punct_out", punct(2, 25), "line_punct_ratio"},
	})
	fs := relax(func(c *FineWebConfig) { c.MaxShortLineFrac = 0.67 })
	short := func(k, n int) string {
		return linesDoc(n, func(i int) string {
			if i < k {
				return vocab(200)[i] + " x." // short
			}
			return line(i, ".")
		})
	}
	// 100 lines: 67 short kept, 68 rejected.
	runCases(t, fs, StageFineWeb, []thrCase{
		{"short_in", short(67, 100), ""},
		{"short_out", short(68, 100), "short_line_ratio"},
	})
	fd := relax(func(c *FineWebConfig) { c.MaxDupLineCharFrac = 0.01 })
	// Lines of 36 chars; one duplicate of a 36-char line among n: share 36/(36n).
	dup := func(n int) string {
		return linesDoc(n, func(i int) string {
			if i == n-1 {
				return line(0, ".")
			}
			return line(i, ".")
		})
	}
	runCases(t, fd, StageFineWeb, []thrCase{
		{"dup_in", dup(100), ""},
		{"dup_out", dup(99), "dup_line_char_ratio"},
	})
	fn := relax(func(c *FineWebConfig) { c.MaxNewlineWordRatio = 0.3 })
	// Lines of 10 words: 3 newlines per 10 words = 0.3 (in); 4 per 12 words out.
	nl := func(wordsPerLine int) string {
		v := vocab(400)
		return linesDoc(10, func(i int) string { return strings.Join(v[i*wordsPerLine:(i+1)*wordsPerLine], " ") + "." })
	}
	runCases(t, fn, StageFineWeb, []thrCase{
		{"newline_in", "aa bb cc dd ee ff gg hh ii jj.\n\n\n", ""}, // 3 newlines / 10 words = 0.3
		{"newline_out", nl(3), "newline_word_ratio"},
		{"newline_in_4", nl(4), ""},
	})
}

func TestOLMoNgram(t *testing.T) {
	f := only(t, func(c *Config) { c.OLMoNgram.Enabled = true })
	rep := func(span string, k int) string {
		return "intro words here " + strings.Repeat(span+" ", k) + "outro words"
	}
	runCases(t, f, StageOLMoNgram, []thrCase{
		{"1gram_in", rep("na", 31), ""},
		{"1gram_out", rep("na", 32), "repeated_ngram_run"},
		{"13gram_in", rep("a b c d e f g h i j k l m", 31), ""},
		{"13gram_out", rep("a b c d e f g h i j k l m", 32), "repeated_ngram_run"},
		{"14gram_ignored", rep("a b c d e f g h i j k l m n", 40), ""},
	})
}

func TestConfigValidation(t *testing.T) {
	cases := []struct {
		field string
		mod   func(c *Config)
	}{
		{"gopher_quality.min_alpha_words_frac", func(c *Config) { c.GopherQuality.MinAlphaWordsFrac = 1.5 }},
		{"gopher_quality.min_words", func(c *Config) { c.GopherQuality.MinWords = 200000 }},
		{"gopher_quality.min_mean_word_length", func(c *Config) { c.GopherQuality.MinMeanWordLength = 20 }},
		{"gopher_repetition.top_ngram_sizes", func(c *Config) { c.GopherRepetition.TopNgramSizes = []int{2} }},
		{"gopher_repetition.dup_ngram_max_frac[0]", func(c *Config) { c.GopherRepetition.DupNgramMaxFrac[0] = -1 }},
		{"c4.line_min_words", func(c *Config) { c.C4.LineMinWords = -1 }},
		{"fineweb.max_short_line_frac", func(c *Config) { c.FineWeb.MaxShortLineFrac = 2 }},
		{"olmo_ngram.min_repeats", func(c *Config) { c.OLMoNgram.MinRepeats = 1 }},
	}
	for _, tc := range cases {
		c := DefaultConfig("web")
		c.GopherRepetition.DupNgramMaxFrac = append([]float64(nil), c.GopherRepetition.DupNgramMaxFrac...)
		tc.mod(&c)
		_, err := New(c)
		if err == nil || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%s: err = %v", tc.field, err)
		}
	}
	for _, k := range Kinds {
		if _, err := New(DefaultConfig(k)); err != nil {
			t.Errorf("DefaultConfig(%q): %v", k, err)
		}
	}
	f, _ := New(DefaultConfig("web"))
	if r := f.Rules(); len(r) < 25 || r[0] != "input/empty" {
		t.Errorf("Rules() = %v", r)
	}
	if v := f.Check("  \n "); v.Keep || v.Key() != "input/empty" {
		t.Errorf("empty: %+v", v)
	}
}

// shakespeareDocs splits the play text into documents of ~n words at blank lines.
func shakespeareDocs(t testing.TB, n int) []string {
	p, err := datadir.Path("tinyshakespeare/input.txt")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var docs []string
	var cur strings.Builder
	words := 0
	for _, para := range strings.Split(string(b), "\n\n") {
		cur.WriteString(para)
		cur.WriteString("\n\n")
		words += len(strings.Fields(para))
		if words >= n {
			docs = append(docs, cur.String())
			cur.Reset()
			words = 0
		}
	}
	return docs
}

func readJSONL(t testing.TB, rel string, fields ...string) []string {
	p, err := datadir.Path(rel)
	if err != nil {
		t.Fatal(err)
	}
	fh, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	sc.Buffer(nil, 1<<24)
	var out []string
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		var parts []string
		for _, f := range fields {
			if s, ok := m[f].(string); ok {
				parts = append(parts, s)
			}
		}
		out = append(out, strings.Join(parts, "\n"))
	}
	return out
}

func keepRate(t *testing.T, kind string, docs []string) (float64, map[string]int) {
	f, err := New(DefaultConfig(kind))
	if err != nil {
		t.Fatal(err)
	}
	kept := 0
	why := map[string]int{}
	for _, d := range docs {
		v := f.Check(d)
		if v.Keep {
			kept++
		} else {
			why[v.Key()]++
		}
	}
	return float64(kept) / float64(len(docs)), why
}

func TestRealData(t *testing.T) {
	sh := shakespeareDocs(t, 2000)
	r, why := keepRate(t, "books", sh)
	t.Logf("books filter on %d Shakespeare docs of ~2000 words: keep %.3f, rejects %v", len(sh), r, why)
	if r < 0.9 {
		t.Errorf("books keep rate %.3f < 0.9", r)
	}
	gsm := readJSONL(t, "gsm8k/train.jsonl", "question", "answer")[:2000]
	r, why = keepRate(t, "math", gsm)
	t.Logf("math filter on %d GSM8K train docs: keep %.3f, rejects %v", len(gsm), r, why)
	if r < 0.9 {
		t.Errorf("math keep rate %.3f < 0.9", r)
	}
	web := append(readJSONL(t, "dolma-testdata/cc_en_head/cc_en_head-0091.jsonl", "text"),
		readJSONL(t, "dolma-testdata/cc_en_head/cc_en_head-0174.jsonl", "text")...)
	r, why = keepRate(t, "web", web)
	t.Logf("web filter on %d cc_en_head docs: keep %.3f, rejects %v", len(web), r, why)
	if r < 0.3 {
		t.Errorf("web keep rate on cleaned CC %.3f < 0.3", r)
	}
	var code []string
	matches, _ := filepath.Glob(filepath.Join(runtime.GOROOT(), "src", "strings", "*.go"))
	more, _ := filepath.Glob(filepath.Join(runtime.GOROOT(), "src", "bufio", "*.go"))
	for _, m := range append(matches, more...) {
		b, err := os.ReadFile(m)
		if err != nil {
			t.Fatal(err)
		}
		code = append(code, string(b))
	}
	r, why = keepRate(t, "code", code)
	t.Logf("code filter on %d Go source files: keep %.3f, rejects %v", len(code), r, why)
	if len(code) < 10 || r < 0.9 {
		t.Errorf("code keep rate %.3f on %d files", r, len(code))
	}
	// The web filter must reject code (curly braces) and a spam page.
	fw, _ := New(DefaultConfig("web"))
	if v := fw.Check(code[0]); v.Keep {
		t.Error("web filter kept Go source")
	}
	spam := spamPage()
	if v := fw.Check(spam); v.Keep {
		t.Error("web filter kept spam page")
	} else {
		t.Logf("spam page rejected by %s (%s)", v.Key(), v.Detail)
	}
}

// spamPage is a WARC-like boilerplate/keyword-stuffed page.
func spamPage() string {
	var b strings.Builder
	b.WriteString("Home | About | Contact | Login\n")
	for i := 0; i < 40; i++ {
		fmt.Fprintf(&b, "cheap pills buy now best price cheap pills buy now\n")
		b.WriteString("Click here!!! >>> BUY >>>\n")
	}
	b.WriteString("This website uses cookies. Read our privacy policy.\n© 2024 All rights reserved\n")
	return b.String()
}

// benchCorpus returns ~4 KB Shakespeare chunks and the cc_en_head web pages.
func benchCorpus(b *testing.B) []string {
	docs := shakespeareDocs(b, 700)
	web := append(readJSONL(b, "dolma-testdata/cc_en_head/cc_en_head-0091.jsonl", "text"),
		readJSONL(b, "dolma-testdata/cc_en_head/cc_en_head-0174.jsonl", "text")...)
	return append(docs, web...)
}

func benchFilter(b *testing.B, kind string) {
	docs := benchCorpus(b)
	total := 0
	for _, d := range docs {
		total += len(d)
	}
	c := DefaultConfig(kind)
	if kind == "web-all" { // every family on, measured on every document
		c = DefaultConfig("web")
	}
	f, err := New(c)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(total))
	b.ReportAllocs()
	for b.Loop() {
		for _, d := range docs {
			f.Check(d)
		}
	}
}

// BenchmarkFields is the reference: strings.Fields over the same bytes.
func BenchmarkFields(b *testing.B) {
	docs := benchCorpus(b)
	total := 0
	for _, d := range docs {
		total += len(d)
	}
	b.SetBytes(int64(total))
	for b.Loop() {
		for _, d := range docs {
			_ = strings.Fields(d)
		}
	}
}

func BenchmarkCheckWeb(b *testing.B)   { benchFilter(b, "web") }
func BenchmarkCheckBooks(b *testing.B) { benchFilter(b, "books") }

func TestConcurrentApply(t *testing.T) {
	f, err := New(DefaultConfig("web"))
	if err != nil {
		t.Fatal(err)
	}
	docs := append(shakespeareDocs(t, 300)[:40], readJSONL(t, "dolma-testdata/cc_en_head/cc_en_head-0091.jsonl", "text")...)
	docs = append(docs, spamPage())
	type res struct {
		text string
		v    Verdict
	}
	want := make([]res, len(docs))
	for i, d := range docs {
		want[i].text, want[i].v = f.Apply(d)
	}
	var wg sync.WaitGroup
	errs := make(chan string, len(docs)*4)
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range docs {
				i := (k + g*7) % len(docs)
				text, v := f.Apply(docs[i])
				if text != want[i].text || v != want[i].v {
					errs <- fmt.Sprintf("doc %d: concurrent result differs", i)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}
