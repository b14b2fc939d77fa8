package tokenizer

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/dlclark/regexp2/v2"

	"github.com/kestrel-lm/kestrel/internal/datadir"
)

var long = flag.Bool("long", false, "compare the pre-tokenizer with regexp2 on every shipped text (slow)")

// regexSplit is the reference: regexp2 matches of pattern, as strings.
func regexSplit(re *regexp2.Regexp, s string) []string {
	var out []string
	m, _ := re.FindStringMatch(s)
	for m != nil {
		out = append(out, m.String())
		m, _ = re.FindNextMatch(m)
	}
	return out
}

// randomText draws strings rich in the cases the patterns distinguish.
func randomText(r *rand.Rand, n int) string {
	alphabet := []string{"a", "B", "z", "é", "ſ", "K", "ß", "日本", "0", "7", "٣", "½", "Ⅻ", " ", "  ", "\t", "\n", "\r\n", "\r", "\u00a0", "\u2028", "\u3000", "\u0085", "'", "'s", "'S", "'ll", "'LL", "'Re", "'ve", "'t", "'d", "'m", "!", "?", ".", ",", "-", "😀", "👍🏽", "\u200d", "\x00", "é", "ĳ", "123456", "    "}
	var sb strings.Builder
	for i := 0; i < n; i++ {
		sb.WriteString(alphabet[r.IntN(len(alphabet))])
	}
	return sb.String()
}

// TestPreTokenizerMatchesRegexp2 compares the scanner with regexp2 running
// the same patterns. One known regexp2 deviation is excluded from the
// random alphabet: regexp2 never matches U+007F (DEL) with these patterns
// and silently drops it (so tiktoken-go loses DEL characters), while the
// regex's meaning, and OpenAI's tiktoken, put it in [^\s\p{L}\p{N}]; the
// scanner follows the regex (TestDELDeviation pins this).
func TestPreTokenizerMatchesRegexp2(t *testing.T) {
	texts := shipped(t)
	r := rand.New(rand.NewPCG(1, 2))
	var random []string
	for i := 0; i < 20000; i++ {
		random = append(random, randomText(r, 1+r.IntN(20)))
	}
	for _, pat := range []string{"gpt2", "llama3"} {
		t.Run(pat, func(t *testing.T) {
			sp, full, err := newSplitter(pat)
			if err != nil {
				t.Fatal(err)
			}
			// regexp2 mis-optimises the full Llama-3 pattern: on
			// "\r\n\t\r\nx" it returns "\r\n" for `\s*[\r\n]+` although
			// the alternative alone (and regexp2 with any one other
			// alternative removed, and RE2 mode) returns "\r\n\t\r\n".
			// A non-capturing group around it gives the regex's meaning
			// back; TestRegexp2Llama3Deviation pins the bug.
			ref := strings.Replace(full, `|\s*[\r\n]+|`, `|(?:\s*[\r\n]+)|`, 1)
			re := regexp2.MustCompile(ref, regexp2.None)
			bad := 0
			check := func(s string) {
				var got []string
				sp.split(s, func(p string) { got = append(got, p) })
				want := regexSplit(re, s)
				if !slices.Equal(got, want) {
					if bad < 5 {
						t.Errorf("%q:\n got %q\nwant %q", s, got, want)
					}
					bad++
				}
			}
			for _, s := range random {
				check(s)
			}
			// regexp2 is slow, so the shipped corpus is sampled (1 text
			// in 16) unless -long; TestGPT2Parity covers all of it
			// through the ids.
			step := 16
			if *long {
				step = 1
			}
			for i := 0; i < len(texts); i += step {
				check(texts[i])
			}
			if bad > 0 {
				t.Fatalf("%d texts split differently from regexp2", bad)
			}
		})
	}
}

// TestCharClassesMatchRegexp2 checks \s, \p{L}, \p{N} on every rune.
func TestCharClassesMatchRegexp2(t *testing.T) {
	var sb strings.Builder
	var runes []rune
	for r := rune(0); r <= utf8.MaxRune; r++ {
		if r >= 0xD800 && r <= 0xDFFF {
			continue
		}
		runes = append(runes, r)
		sb.WriteRune(r)
	}
	s := sb.String()
	for _, c := range []struct {
		re  string
		cls uint8
	}{{`\s`, clsSpace}, {`\p{L}`, clsLetter}, {`\p{N}`, clsNumber}} {
		re := regexp2.MustCompile(c.re, regexp2.None)
		in := map[int]bool{}
		m, _ := re.FindStringMatch(s)
		for m != nil {
			in[m.RuneIndex] = true
			m, _ = re.FindNextMatch(m)
		}
		for i, r := range runes {
			enc := string(r)
			got, _ := class(enc, 0)
			if (got == c.cls) != in[i] {
				t.Fatalf("%s on %U: scanner %v, regexp2 %v", c.re, r, got == c.cls, in[i])
			}
		}
	}
}

func gpt2(t testing.TB) *Tokenizer {
	t.Helper()
	p, err := datadir.Path("gpt2-bpe/r50k_base.tiktoken")
	if err != nil {
		t.Fatal(err)
	}
	tok, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func TestRoundTrip(t *testing.T) {
	tok := gpt2(t)
	trained := trainSmall(t, "llama3", 1)
	r := rand.New(rand.NewPCG(3, 4))
	cases := []string{"", " ", "\xff", "\xc3", "a\xffb", "\xed\xa0\x80", "😀👍🏽🇫🇷", strings.Repeat("9", 10000), strings.Repeat(" ", 5000), strings.Repeat("\n", 300) + "x", strings.Repeat("ab ", 2000), "<|endoftext|>", "a\x7fb \x7f\x7f", "It's 12345678 o'clock!!  \t\n"}
	for i := 0; i < 2000; i++ {
		b := make([]byte, r.IntN(64))
		for k := range b {
			b[k] = byte(r.Uint32())
		}
		cases = append(cases, string(b), randomText(r, r.IntN(40)))
	}
	for _, tk := range []*Tokenizer{tok, trained} {
		for _, s := range cases {
			ids := tk.Encode(s)
			if got := tk.Decode(ids); !bytes.Equal(got, []byte(s)) {
				t.Fatalf("round trip of %q gave %q", trunc(s), trunc(string(got)))
			}
			for _, id := range ids {
				if int(id) >= tk.VocabSize() {
					t.Fatalf("id %d ≥ vocab %d", id, tk.VocabSize())
				}
			}
		}
	}
	// special tokens: ordinary in Encode, recognised by EncodeSpecial
	if ids := tok.Encode("<|endoftext|>"); slices.Contains(ids, tok.EOT()) {
		t.Fatalf("Encode produced EOT from text: %v", ids)
	}
	if ids := tok.EncodeSpecial("a<|endoftext|>b"); !slices.Equal(ids, []int32{64, 50256, 65}) {
		t.Fatalf("EncodeSpecial = %v", ids)
	}
}

// TestLongPiecesSmallVsLarge checks that the heap merger agrees with the
// linear one.
func TestLongPiecesSmallVsLarge(t *testing.T) {
	tok := gpt2(t)
	r := rand.New(rand.NewPCG(5, 6))
	st := &encState{}
	for i := 0; i < 3000; i++ {
		var s string
		switch i % 3 {
		case 0:
			s = strings.Repeat(string(rune('0'+r.IntN(10))), 1+r.IntN(200)) + "12"
		case 1:
			s = randomText(r, 1+r.IntN(60))
		default:
			b := make([]byte, 1+r.IntN(100))
			for k := range b {
				b[k] = "abcdefghij  eth"[r.IntN(15)]
			}
			s = string(b)
		}
		a := tok.bpeSmall(st, nil, s)
		b := tok.bpeLarge(st, nil, s)
		if !slices.Equal(a, b) {
			t.Fatalf("%q: small %v large %v", s, a, b)
		}
	}
}

func trainSmall(t testing.TB, pattern string, workers int) *Tokenizer {
	t.Helper()
	texts := shipped(t)
	docs := func(yield func(string) bool) {
		for i := 0; i < len(texts); i += 40 {
			if !yield(texts[i]) {
				return
			}
		}
	}
	tok, err := Train(context.Background(), docs, TrainOptions{VocabSize: 1000, Pattern: pattern, Workers: workers, Special: []string{"<|endoftext|>", "<|pad|>"}})
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func TestTrainDeterministic(t *testing.T) {
	for _, pat := range []string{"gpt2", "llama3"} {
		a := trainSmall(t, pat, 1)
		b := trainSmall(t, pat, 3)
		c := trainSmall(t, pat, 3)
		if a.Hash() != b.Hash() || b.Hash() != c.Hash() {
			t.Fatalf("%s: hashes differ: %s %s %s", pat, a.Hash(), b.Hash(), c.Hash())
		}
		if a.VocabSize() != 1000 {
			t.Fatalf("vocab size %d, want 1000", a.VocabSize())
		}
		if id, ok := a.SpecialID("<|pad|>"); !ok || id != 999 || a.EOT() != 998 {
			t.Fatalf("specials: pad %d %v eot %d", id, ok, a.EOT())
		}
		// the trained tokenizer compresses: fewer tokens than bytes
		s := "The quick brown fox jumps over the lazy dog. It's 2024 and the answer is 42."
		if n := len(a.Encode(s)); n >= len(s)*2/3 {
			t.Fatalf("%s: %d tokens for %d bytes", pat, n, len(s))
		}
	}
	// llama3 splits digits into groups of at most 3
	l := trainSmall(t, "llama3", 2)
	for _, id := range l.Encode("1234567") {
		b, _ := l.Token(id)
		if len(b) > 3 {
			t.Fatalf("llama3 token %q longer than 3 digits", b)
		}
	}
}

func TestSaveLoadIdentity(t *testing.T) {
	dir := t.TempDir()
	neox, err := datadir.Path("dolma-testdata/tokenizer/gpt-neo-test-tokenizer.json")
	if err != nil {
		t.Fatal(err)
	}
	nt, err := Load(neox)
	if err != nil {
		t.Fatal(err)
	}
	for name, tok := range map[string]*Tokenizer{"gpt2": gpt2(t), "trained": trainSmall(t, "llama3", 2), "neox": nt} {
		p := filepath.Join(dir, name+".json")
		if err := tok.Save(p); err != nil {
			t.Fatal(err)
		}
		back, err := Load(p)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if back.Hash() != tok.Hash() {
			t.Fatalf("%s: hash changed on write→read", name)
		}
		a, _ := tok.Marshal()
		b, _ := back.Marshal()
		if !bytes.Equal(a, b) {
			t.Fatalf("%s: tokenizer.json differs after write→read", name)
		}
		for i, s := range shipped(t) {
			if i%50 != 0 {
				continue
			}
			if !slices.Equal(tok.Encode(s), back.Encode(s)) {
				t.Fatalf("%s: %q encodes differently after write→read", name, trunc(s))
			}
		}
	}
}

func TestNeoXLoadsAndEncodes(t *testing.T) {
	p, err := datadir.Path("dolma-testdata/tokenizer/gpt-neo-test-tokenizer.json")
	if err != nil {
		t.Fatal(err)
	}
	tok, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if tok.VocabSize() != 50280 {
		t.Fatalf("vocab %d, want 50280", tok.VocabSize())
	}
	if id, ok := tok.SpecialID("<|endoftext|>"); !ok || tok.EOT() != id {
		t.Fatalf("EOT %d, <|endoftext|> %d %v", tok.EOT(), id, ok)
	}
	s := "Hello world, this is GPT-NeoX.\n    indented   code"
	ids := tok.Encode(s)
	if got := tok.DecodeString(ids); got != s {
		t.Fatalf("round trip: %q", got)
	}
	// Known GPT-NeoX-20B ids ("Hello" = 12092, " world" = 1533).
	if !slices.Equal(tok.Encode("Hello world"), []int32{12092, 1533}) {
		t.Fatalf("Hello world = %v", tok.Encode("Hello world"))
	}
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	cases := map[string]string{
		"bad.tiktoken":   "IQ== 0\nnot-base64! 1\n",
		"bad.json":       "{\"model\": {\"type\": \"WordPiece\"}}",
		"trunc.json":     "{\"model\": ",
		"short.tiktoken": "IQ== 0\n",
	}
	for name, body := range cases {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(body), 0o644)
		_, err := Load(p)
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Fatalf("%s: error %v does not name the file", name, err)
		}
	}
}

func TestDELDeviation(t *testing.T) {
	got, _ := PreTokenize("gpt2", "!\x7f a")
	if !slices.Equal(got, []string{"!\x7f", " a"}) {
		t.Fatalf("scanner: %q", got)
	}
	re := regexp2.MustCompile(GPT2Pattern, regexp2.None)
	if ref := regexSplit(re, "!\x7f a"); !slices.Equal(ref, []string{"!", " a"}) {
		t.Logf("regexp2 no longer drops DEL (%q): the exclusion in TestPreTokenizerMatchesRegexp2 can go", ref)
	}
}

func TestRegexp2Llama3Deviation(t *testing.T) {
	s := "\r\n\t\r\nx"
	got, _ := PreTokenize("llama3", s)
	if !slices.Equal(got, []string{"\r\n\t\r\n", "x"}) {
		t.Fatalf("scanner: %q", got)
	}
	re := regexp2.MustCompile(Llama3Pattern, regexp2.None)
	if ref := regexSplit(re, s); !slices.Equal(ref, []string{"\r\n", "\t\r\n", "x"}) {
		t.Logf("regexp2 now gives %q: the rewrite in TestPreTokenizerMatchesRegexp2 can go", ref)
	}
}

// TestConcurrentEncode: one Tokenizer used from several goroutines gives
// the same ids as sequential use.
func TestConcurrentEncode(t *testing.T) {
	tok := gpt2(t)
	texts := shipped(t)[:4000]
	want := make([][]int32, len(texts))
	for i, s := range texts {
		want[i] = tok.Encode(s)
	}
	fresh := gpt2(t)
	errs := make(chan string, 4)
	for g := 0; g < 4; g++ {
		go func(g int) {
			for i := g; i < len(texts); i += 2 { // overlapping halves
				if !slices.Equal(fresh.Encode(texts[i]), want[i]) {
					errs <- texts[i]
					return
				}
			}
			errs <- ""
		}(g % 2)
	}
	for g := 0; g < 4; g++ {
		if s := <-errs; s != "" {
			t.Fatalf("concurrent encode of %q differs", trunc(s))
		}
	}
}

// TestHFMergesArrayAndCustomPattern: merges written as [a, b] pairs (newer
// tokenizers versions) load like "a b" strings, and a pattern other than
// the two built in runs through regexp2 and still round-trips.
func TestHFMergesArrayAndCustomPattern(t *testing.T) {
	texts := shipped(t)[:3000]
	docs := func(yield func(string) bool) {
		for _, s := range texts {
			if !yield(s) {
				return
			}
		}
	}
	tok, err := Train(context.Background(), docs, TrainOptions{VocabSize: 400, Pattern: `\p{L}+|\p{N}|\s+|[^\s\p{L}\p{N}]+`})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range append(texts[:200], "a\xffb 12 😀", "x\x7fy") {
		if got := tok.DecodeString(tok.Encode(s)); got != s {
			t.Fatalf("custom pattern round trip %q → %q", trunc(s), trunc(got))
		}
	}
	data, err := tok.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	var f map[string]any
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatal(err)
	}
	model := f["model"].(map[string]any)
	var pairs [][2]string
	for _, m := range model["merges"].([]any) {
		a, b, _ := strings.Cut(m.(string), " ")
		pairs = append(pairs, [2]string{a, b})
	}
	model["merges"] = pairs
	data, _ = json.Marshal(f)
	p := filepath.Join(t.TempDir(), "tokenizer.json")
	os.WriteFile(p, data, 0o644)
	back, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if back.Hash() != tok.Hash() {
		t.Fatal("merges as pairs load differently")
	}
}

// TestIDsOutsideVocabulary: negative and too-large int32 ids are unknown
// (never a panic), decode to U+FFFD, and only added tokens are IsAdded.
func TestIDsOutsideVocabulary(t *testing.T) {
	tok := gpt2(t)
	eot := tok.EOT()
	for _, c := range []struct {
		id            int32
		valid, added  bool
		decodedPrefix string
	}{
		{-1, false, false, "\uFFFD"},
		{-1 << 31, false, false, "\uFFFD"},
		{int32(tok.VocabSize()), false, false, "\uFFFD"},
		{15496, true, false, "Hello"},
		{eot, true, true, "<|endoftext|>"},
	} {
		if got := tok.ValidID(c.id); got != c.valid {
			t.Errorf("ValidID(%d) = %v, want %v", c.id, got, c.valid)
		}
		if got := tok.IsAdded(c.id); got != c.added {
			t.Errorf("IsAdded(%d) = %v, want %v", c.id, got, c.added)
		}
		if got := tok.DecodeString([]int32{c.id}); got != c.decodedPrefix {
			t.Errorf("DecodeString([%d]) = %q, want %q", c.id, got, c.decodedPrefix)
		}
	}
}
