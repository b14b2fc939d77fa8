package clean

import (
	"strings"
	"testing"
)

// TestCompressionRule: prose is kept, text that compresses below the
// threshold is rejected with its ratio, short text is not judged, and the
// ratio does not depend on the pooled writer's history.
func TestCompressionRule(t *testing.T) {
	art := strings.Repeat("-=", 2000) // one 4000-byte "word" of ASCII art
	var prose string                  // ~2,500 bytes of Tiny Shakespeare
	for _, d := range readLabelled(t) {
		if strings.HasPrefix(d.ID, "tinyshakespeare/") {
			prose = d.Text
			break
		}
	}
	cases := []struct {
		name string
		mod  func(*CompressionConfig)
		text string
		rule string
	}{
		{"prose", func(*CompressionConfig) {}, prose, ""},
		{"repeated line", func(*CompressionConfig) {}, strings.Repeat("Home | About | Contact | Login\n", 60), "ratio"},
		{"ascii art after prose", func(*CompressionConfig) {}, prose + "\n" + art, "ratio"},
		{"below min_bytes not judged", func(*CompressionConfig) {}, strings.Repeat("ab", 511), ""},
		{"at min_bytes judged", func(*CompressionConfig) {}, strings.Repeat("ab", 512), "ratio"},
		{"threshold 0 keeps all", func(c *CompressionConfig) { c.MinRatio = 0 }, art, ""},
		{"threshold above prose", func(c *CompressionConfig) { c.MinRatio = 0.9 }, prose, "ratio"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := only(t, func(c *Config) {
				c.Compression = DefaultConfig("web").Compression
				tc.mod(&c.Compression)
			})
			runCases(t, f, StageCompression, []thrCase{{tc.name, tc.text, tc.rule}})
		})
	}
	// ASCII art in one line is one symbol word: the books set's word rules
	// do not see it; the compression rule does.
	books := DefaultConfig("books")
	books.Compression.Enabled = false
	fb, err := New(books)
	if err != nil {
		t.Fatal(err)
	}
	if v := fb.Check(prose + "\n" + art); !v.Keep {
		t.Fatalf("books set without the compression rule: %s (%s)", v.Key(), v.Detail)
	}
	fc, err := New(DefaultConfig("books"))
	if err != nil {
		t.Fatal(err)
	}
	if v := fc.Check(prose + "\n" + art); v.Keep || v.Key() != "compression/ratio" {
		t.Fatalf("books set: got keep=%v %s, want compression/ratio", v.Keep, v.Key())
	}
}

func TestCompressionRatioDeterministic(t *testing.T) {
	var s scratch
	texts := []string{strings.Repeat(enProse, 50), "x", strings.Repeat("ab", 40000), frProse}
	for _, text := range texts {
		want := CompressionRatio(text)
		for i := 0; i < 2; i++ {
			if got := s.compressionRatio(text); got != want {
				t.Fatalf("%.20q: pooled writer gives %v, fresh %v", text, got, want)
			}
		}
		if want <= 0 {
			t.Errorf("%.20q: ratio %v <= 0", text, want)
		}
	}
	if r := CompressionRatio(""); r != 0 {
		t.Errorf("empty text: ratio %v, want 0", r)
	}
	if a, b := CompressionRatio(strings.Repeat("ab", 40000)), CompressionRatio(prose3()); a >= 0.01 || b < 0.3 {
		t.Errorf("ratios %v (a repeated pair) and %v (prose): want < 0.01 and >= 0.3", a, b)
	}
}

func prose3() string { return enProse + frProse + deProse }

// BenchmarkLangID and BenchmarkCompression measure the two rules alone on
// the bench corpus (~4 KB Shakespeare chunks and the cc_en_head pages).
func BenchmarkLangID(b *testing.B) {
	docs := benchCorpus(b)
	total := 0
	for _, d := range docs {
		total += len(d)
	}
	b.SetBytes(int64(total))
	for b.Loop() {
		for _, d := range docs {
			DetectLang(head(d, DefaultConfig("web").LangID.MaxBytes))
		}
	}
}

func BenchmarkCompression(b *testing.B) {
	docs := benchCorpus(b)
	total := 0
	for _, d := range docs {
		total += len(d)
	}
	var s scratch
	b.SetBytes(int64(total))
	for b.Loop() {
		for _, d := range docs {
			s.compressionRatio(d)
		}
	}
}
