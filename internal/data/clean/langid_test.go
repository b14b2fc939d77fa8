package clean

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// labelled is one document of testdata/langid/labelled.jsonl (built by
// tools/langid/make_labelled.py; provenance in testdata/langid/SOURCE).
type labelled struct {
	ID    string `json:"id"`
	Lang  string `json:"lang"`  // read from the text
	Label string `json:"label"` // keep (English) or reject
	Text  string `json:"text"`
}

func readLabelled(t testing.TB) []labelled {
	t.Helper()
	fh, err := os.Open(filepath.Join("testdata", "langid", "labelled.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	var out []labelled
	sc := bufio.NewScanner(fh)
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		var d labelled
		if err := json.Unmarshal(sc.Bytes(), &d); err != nil {
			t.Fatalf("labelled.jsonl:%d: %v", n, err)
		}
		out = append(out, d)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// langOnly is the web set's language ID alone.
func langOnly(t *testing.T, mod func(c *LangIDConfig)) *Filter {
	return only(t, func(c *Config) {
		c.LangID = DefaultConfig("web").LangID
		mod(&c.LangID)
	})
}

// TestLangIDLabelled: on hand-labelled documents of the shipped data
// (English prose, the Aragonese Common Crawl page) and real web pages in
// nine languages, the web set's language ID keeps English with precision
// and recall >= 0.95, and names each rejected page's language.
func TestLangIDLabelled(t *testing.T) {
	docs := readLabelled(t)
	f := langOnly(t, func(*LangIDConfig) {})
	var tp, fp, fn, tn int
	langs := map[string]int{}
	for _, d := range docs {
		v := f.Check(d.Text)
		switch {
		case d.Label == "keep" && v.Keep:
			tp++
		case d.Label == "keep":
			fn++
			t.Errorf("%s: English rejected: %s (%s)", d.ID, v.Key(), v.Detail)
		case v.Keep:
			fp++
			t.Errorf("%s (%s): kept", d.ID, d.Lang)
		default:
			tn++
			langs[v.Rule]++
			if _, known := LangCode(d.Lang); known && v.Rule != d.Lang {
				t.Errorf("%s: rejected as %s (%s), the text is %s", d.ID, v.Key(), v.Detail, d.Lang)
			}
		}
	}
	if tp+fn < 20 || tn+fp < 20 {
		t.Fatalf("%d English and %d non-English documents: want >= 20 each", tp+fn, tn+fp)
	}
	prec, rec := float64(tp)/float64(tp+fp), float64(tp)/float64(tp+fn)
	t.Logf("%d documents: English kept %d/%d, non-English rejected %d/%d (%v); precision %.3f recall %.3f",
		len(docs), tp, tp+fn, tn, tn+fp, langs, prec, rec)
	if prec < 0.95 || rec < 0.95 {
		t.Errorf("precision %.3f, recall %.3f: want >= 0.95 each", prec, rec)
	}
}

const (
	enProse = "The committee met on Tuesday and agreed that the budget would be reviewed again next month. " +
		"The members also discussed the timetable for the new building and the costs of the works. " +
		"Nobody raised any objection to the plan, and the meeting ended shortly after noon. "
	frProse = "Le comité s'est réuni mardi et a convenu que le budget serait réexaminé le mois prochain. " +
		"Les membres ont également discuté du calendrier du nouveau bâtiment et du coût des travaux prévus. " +
		"Personne n'a soulevé d'objection au projet, et la réunion s'est terminée peu après midi. "
	deProse = "Der Ausschuss trat am Dienstag zusammen und beschloss, dass der Haushalt im nächsten Monat erneut " +
		"überprüft wird. Die Mitglieder besprachen auch den Zeitplan für den Neubau und die Kosten der Arbeiten. "
	goCode = "func (f *Filter) Check(text string) Verdict {\n\t_, v := f.Apply(text)\n\treturn v\n}\n\n" +
		"func reject(stage, rule, detail string) Verdict {\n\treturn Verdict{Stage: stage, Rule: rule, Detail: detail}\n}\n" +
		"func ff(v float64) string { return strconv.FormatFloat(v, 'g', 4, 64) }\n"
)

// TestLangIDEdges: mixed languages go by the majority, numbers alone are
// "und", code is not English, short texts are not judged, non-Latin
// scripts are named, keep takes either code form, and only the first
// max_bytes are judged.
func TestLangIDEdges(t *testing.T) {
	def := func(*LangIDConfig) {}
	cases := []struct {
		name string
		mod  func(*LangIDConfig)
		text string
		rule string // "" = keep, "*" = any langid rule
	}{
		{"english", def, enProse, ""},
		{"mixed, mostly English", def, enProse + "Le comité s'est réuni mardi. " + enProse, ""},
		{"mixed, mostly French", def, frProse + "The committee met on Tuesday. " + frProse, "fr"},
		{"numbers only", def, strings.Repeat("1234 5678 90, 3.14 - 2,718; ", 10), Und},
		{"symbols only", def, strings.Repeat("### *** --- +++ === ", 12), Und},
		{"go code", def, goCode, "*"},
		{"very short english", def, "Hello world.", ""},
		{"very short french", def, "Bonjour tout le monde, comment allez-vous ?", ""},
		{"199 chars not judged", def, strings.Repeat("é", 199), ""},
		{"200 chars judged", def, strings.Repeat("é", 200), "*"},
		{"russian", def, strings.Repeat("Москва — столица России, город федерального значения и центр Московской области. ", 3), "ru"},
		{"greek", def, strings.Repeat("Η Αθήνα είναι η πρωτεύουσα και μεγαλύτερη πόλη της Ελλάδας, με ιστορία χιλιάδων ετών. ", 3), "el"},
		{"japanese", def, strings.Repeat("東京都は日本の首都であり、関東地方に位置する。人口は約千四百万人である。", 6), "ja"},
		{"chinese", def, strings.Repeat("北京是中华人民共和国的首都，是全国的政治中心、文化中心和科技创新中心。", 7), "zh"},
		{"arabic", def, strings.Repeat("القاهرة هي عاصمة جمهورية مصر العربية وأكبر مدنها، وتقع على ضفاف نهر النيل. ", 3), "ar"},
		{"low confidence english", def, spamPage(), "low_confidence"},
		{"keep de: german kept", func(c *LangIDConfig) { c.Keep = []string{"de"} }, deProse, ""},
		{"keep de: english rejected", func(c *LangIDConfig) { c.Keep = []string{"de"} }, enProse, "en"},
		{"keep deu (ISO 639-3)", func(c *LangIDConfig) { c.Keep = []string{"DEU"} }, deProse, ""},
		{"keep en,fr", func(c *LangIDConfig) { c.Keep = []string{"en", "fr"} }, frProse, ""},
		{"only the head is judged", func(c *LangIDConfig) { c.MaxBytes = 400 },
			enProse + enProse + strings.Repeat(frProse, 10), ""},
		{"a long text judged on a short head", func(c *LangIDConfig) { c.MaxBytes = 100 },
			strings.Repeat(frProse, 10), "fr"},
		{"max_bytes 0 judges all", func(c *LangIDConfig) { c.MaxBytes = 0 },
			enProse + enProse + strings.Repeat(frProse, 10), "fr"},
		{"min_chars 0 judges short", func(c *LangIDConfig) { c.MinChars = 0 }, "Bonjour tout le monde, comment allez-vous ?", "fr"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := langOnly(t, tc.mod).Check(tc.text)
			switch {
			case tc.rule == "" && !v.Keep:
				t.Fatalf("want keep, got %s (%s)", v.Key(), v.Detail)
			case tc.rule == "":
			case v.Keep || v.Stage != StageLangID:
				t.Fatalf("want reject langid/%s, got keep=%v %s (%s)", tc.rule, v.Keep, v.Key(), v.Detail)
			case tc.rule != "*" && v.Rule != tc.rule:
				t.Fatalf("want reject langid/%s, got %s (%s)", tc.rule, v.Key(), v.Detail)
			case v.Detail == "":
				t.Fatal("empty detail")
			}
		})
	}
}

func TestHeadCutsAtCharacter(t *testing.T) {
	for _, tc := range []struct {
		text string
		max  int
		want string
	}{
		{"ééé", 3, "é"}, {"ééé", 4, "éé"}, {"ééé", 0, "ééé"}, {"abc", 10, "abc"}, {"€x", 2, ""},
	} {
		if got := head(tc.text, tc.max); got != tc.want {
			t.Errorf("head(%q, %d) = %q, want %q", tc.text, tc.max, got, tc.want)
		}
	}
}

func TestLangIDConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		mod  func(c *Config)
		want string
	}{
		{func(c *Config) { c.LangID.Keep = nil }, "langid.keep is empty"},
		{func(c *Config) { c.LangID.Keep = []string{"en", "klingon"} }, "langid.keep[1] = \"klingon\""},
		{func(c *Config) { c.LangID.MinConfidence = 1.5 }, "langid.min_confidence = 1.5"},
		{func(c *Config) { c.LangID.MinChars = -1 }, "langid.min_chars = -1"},
		{func(c *Config) { c.LangID.MaxBytes = -1 }, "langid.max_bytes = -1"},
		{func(c *Config) { c.Compression.MinRatio = -0.1 }, "compression.min_ratio = -0.1"},
		{func(c *Config) { c.Compression.MinBytes = -5 }, "compression.min_bytes = -5"},
	} {
		c := DefaultConfig("web")
		tc.mod(&c)
		_, err := New(c)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("got %v, want an error containing %q", err, tc.want)
		}
	}
	c := DefaultConfig("web")
	c.LangID = LangIDConfig{Enabled: false, MinConfidence: 7}
	if _, err := New(c); err != nil {
		t.Errorf("a disabled langid is not validated: %v", err)
	}
}

// FuzzLangID: on any text the language ID and compression rules neither
// panic nor disagree with themselves (same verdict twice, concurrently
// pooled state included), and the confidence is a fraction.
func FuzzLangID(f *testing.F) {
	for _, s := range []string{"", "Hello world.", enProse, frProse, deProse, goCode, "\xff\xfe", strings.Repeat("é", 201),
		strings.Repeat("北京是中华人民共和国的首都。", 20), strings.Repeat("1 2 3 ", 100)} {
		f.Add(s)
	}
	c := DefaultConfig("web")
	c.LangID.MinChars = 0
	c.Compression.MinBytes = 0
	flt, err := New(c)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, text string) {
		lang, conf := DetectLang(text)
		if l2, c2 := DetectLang(text); l2 != lang || c2 != conf {
			t.Fatalf("DetectLang twice: %s %v then %s %v", lang, conf, l2, c2)
		}
		if conf < 0 || conf > 1 || (lang == Und) != (conf == 0) {
			t.Fatalf("DetectLang = %s %v", lang, conf)
		}
		a, va := flt.Apply(text)
		b, vb := flt.Apply(text)
		if a != b || va != vb {
			t.Fatalf("Apply twice differs: %v then %v", va, vb)
		}
	})
}
