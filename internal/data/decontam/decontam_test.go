package decontam

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
	"time"

	"github.com/kestrel-lm/kestrel/internal/datadir"
)

var (
	defOnce  sync.Once
	defIndex *Index
	defErr   error
)

func defaultIndex(t testing.TB) *Index {
	t.Helper()
	defOnce.Do(func() {
		var m0, m1 runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m0)
		start := time.Now()
		dc := DefaultConfig()
		if defErr = datadir.Resolve(&dc); defErr == nil {
			defIndex, defErr = Build(dc)
		}
		runtime.GC()
		runtime.ReadMemStats(&m1)
		if defErr == nil {
			t.Logf("default index: live heap %.1f MiB (%d n-grams in the map)", float64(m1.HeapAlloc-m0.HeapAlloc)/(1<<20), len(defIndex.post))
			for _, s := range defIndex.Stats() {
				t.Logf("eval set %-9s items %6d  n-grams %8d  common (ignored) %d", s.Name, s.Items, s.NGrams, s.Common)
			}
			t.Logf("default index built in %v", time.Since(start).Round(time.Millisecond))
		}
	})
	if defErr != nil {
		t.Fatal(defErr)
	}
	return defIndex
}

type gsmItem struct {
	line     int
	question string
}

func gsmTest(t testing.TB) []gsmItem {
	p, err := datadir.Path("gsm8k/test.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	var out []gsmItem
	line := 0
	for sc.Scan() {
		line++
		var m struct{ Question string }
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		out = append(out, gsmItem{line, m.Question})
	}
	return out
}

func wikiParas(t testing.TB, n int) []string {
	p, err := datadir.Path("wikitext-2/valid.txt")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		l = strings.TrimSpace(l)
		if len(strings.Fields(l)) >= 60 && !strings.HasPrefix(l, "=") {
			out = append(out, l)
			if len(out) == n {
				break
			}
		}
	}
	return out
}

func TestPlantedGSM8K(t *testing.T) {
	x := defaultIndex(t)
	items := gsmTest(t)
	paras := wikiParas(t, 200)
	caught, planted := 0, 0
	for k := 0; k < 60; k++ {
		it := items[k*20]
		if len(strings.Fields(it.question)) < 16 {
			continue
		}
		planted++
		// Web-like page: navigation, a paragraph, the question re-cased with
		// punctuation changed and on its own lines, another paragraph.
		q := strings.ToUpper(it.question[:1]) + strings.ReplaceAll(it.question[1:], ". ", " .\n")
		doc := "Home | Forum | Homework help\n\n" + paras[k] + "\n\nPosted by user123: can someone solve this?\n" + q +
			"\nThanks in advance!!\n\n" + paras[k+100]
		m := x.Check(fmt.Sprint(k), doc)
		want := fmt.Sprintf("test.jsonl:%d", it.line)
		found := false
		for _, h := range m.Hits {
			if h.EvalSet == "gsm8k" && h.ItemID == want {
				found = true
			}
		}
		if found {
			caught++
		} else {
			t.Errorf("planted GSM8K item %s not caught: %+v", want, m.Hits)
		}
		if k == 0 {
			t.Logf("example hit: %+v", m.Hits[0])
		}
	}
	t.Logf("planted GSM8K test questions caught: %d/%d", caught, planted)
	// Clean real text does not flag.
	fp := 0
	for _, p := range paras {
		if m := x.Check("w", p); m.Hit {
			fp++
			t.Logf("false positive: %+v", m.Hits)
		}
	}
	t.Logf("clean WikiText paragraphs flagged: %d/%d", fp, len(paras))
	if fp > 0 {
		t.Errorf("%d clean paragraphs flagged", fp)
	}
}

func TestHellaSwagAndPIQA(t *testing.T) {
	x := defaultIndex(t)
	doc := "Some intro text here. Roof shingle removal: A man is sitting on a roof. He starts pulling up roofing on a roof. More text follows."
	m := x.Check("h", doc)
	if !m.Hit || m.Hits[0].EvalSet != "hellaswag" || m.Hits[0].ItemID != "hellaswag_val_preprocessed.jsonl:1" {
		t.Errorf("hellaswag ctx+ending not caught: %+v", m)
	}
	doc = "Q: How do I ready a guinea pig cage for it's new occupants? A: Provide the guinea pig with a cage full of a few inches of bedding"
	m = x.Check("p", doc)
	if !m.Hit || m.Hits[0].EvalSet != "piqa" || m.Hits[0].ItemID != "valid.jsonl:1" {
		t.Errorf("piqa goal+solution not caught: %+v", m)
	}
}

func writeFile(t *testing.T, name, content string) string {
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCommonNGramsIgnored(t *testing.T) {
	common := "please read the following problem carefully and then answer the question below"
	var b strings.Builder
	for i := 0; i < 12; i++ {
		fmt.Fprintf(&b, "{\"q\": %q}\n", fmt.Sprintf("%s item %d asks about zebra%d apples and oranges in basket number %d today", common, i, i, i))
	}
	p := writeFile(t, "eval.jsonl", b.String())
	doc := "intro. " + common + " item, and some other words after it." // 13 words shared by all 12 items
	for _, tc := range []struct {
		maxFreq int
		hit     bool
	}{{10, false}, {12, true}} {
		cfg := Config{NGram: 13, MaxItemFreq: tc.maxFreq, Mode: ModeDrop, EvalSets: []EvalSet{{Name: "toy", Paths: []string{p}, Fields: []string{"q"}}}}
		x, err := Build(cfg)
		if err != nil {
			t.Fatal(err)
		}
		m := x.Check("d", doc)
		if m.Hit != tc.hit {
			t.Errorf("max_item_freq %d: hit = %v, want %v (%+v)", tc.maxFreq, m.Hit, tc.hit, m.Hits)
		}
		if tc.hit && len(m.Hits) != 12 {
			t.Errorf("max_item_freq %d: %d items, want 12", tc.maxFreq, len(m.Hits))
		}
		st := x.Stats()[0]
		t.Logf("max_item_freq %d: %+v", tc.maxFreq, st)
		if !tc.hit && st.Common == 0 {
			t.Error("no common n-grams counted")
		}
		// The item-specific part still matches.
		if m := x.Check("d", "zebra3 apples and oranges in basket number 3 today and more"); tc.maxFreq == 10 && m.Hit {
			t.Errorf("short tail matched: %+v", m)
		}
		if m := x.Check("d", "the question below item 5 asks about zebra5 apples and oranges in basket number 5 today"); !m.Hit || m.Hits[0].ItemID != "eval.jsonl:6" {
			t.Errorf("specific n-gram not matched: %+v", m)
		}
	}
}

func TestCutWithMargin(t *testing.T) {
	x := defaultIndex(t)
	it := gsmTest(t)[0]
	var pre, post []string
	for i := 0; i < 80; i++ {
		pre = append(pre, fmt.Sprintf("pre%d", i))
		post = append(post, fmt.Sprintf("post%d", i))
	}
	doc := strings.Join(pre, " ") + "\n" + it.question + "\n" + strings.Join(post, " ")
	m := x.Check("c", doc)
	if !m.Hit || len(m.Spans) != 1 {
		t.Fatalf("match %+v", m)
	}
	out := x.Cut(doc, m)
	margin := x.Config().Margin // 50 words each side
	left := map[string]bool{}
	for _, w := range strings.Fields(out) {
		left[w] = true
	}
	for _, w := range []string{"ducks", "farmers'", fmt.Sprintf("pre%d", 80-margin), fmt.Sprintf("post%d", margin-1)} {
		if left[w] {
			t.Errorf("cut text still holds %q: %q", w, out)
		}
	}
	for _, w := range []string{fmt.Sprintf("pre%d", 80-margin-1), "pre0", fmt.Sprintf("post%d", margin), "post79"} {
		if !left[w] {
			t.Errorf("cut removed %q beyond the margin: %q", w, out)
		}
	}
	if got := x.Cut("unrelated", Match{}); got != "unrelated" {
		t.Errorf("Cut without spans changed text: %q", got)
	}
}

func TestBadEvalData(t *testing.T) {
	cases := []struct {
		name, content, want string
	}{
		{"badjson", "{\"q\": \"ok\"}\n\n{\"q\": oops}\n", "bad.jsonl:3"},
		{"missing", "{\"q\": \"ok\"}\n{\"x\": \"no q\"}\n", "bad.jsonl:2: field \"q\" missing"},
		{"type", "{\"q\": 5}\n", "bad.jsonl:1: field \"q\" is neither"},
		{"empty", "{\"q\": \"  \"}\n", "bad.jsonl:1: item has no text"},
	}
	for _, tc := range cases {
		p := writeFile(t, "bad.jsonl", tc.content)
		_, err := Build(Config{NGram: 13, MaxItemFreq: 10, Mode: ModeCut, EvalSets: []EvalSet{{Name: "toy", Paths: []string{p}, Fields: []string{"q"}}}})
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "eval set toy") {
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.want)
		}
	}
	_, err := Build(Config{NGram: 13, MaxItemFreq: 10, Mode: ModeDrop, EvalSets: []EvalSet{{Name: "toy", Paths: []string{"/nonexistent/x.jsonl"}, Fields: []string{"q"}}}})
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/x.jsonl") {
		t.Errorf("missing file: %v", err)
	}
	for _, tc := range []struct {
		field string
		mod   func(*Config)
	}{
		{"ngram", func(c *Config) { c.NGram = 0 }},
		{"max_item_freq", func(c *Config) { c.MaxItemFreq = 0 }},
		{"mode", func(c *Config) { c.Mode = "zap" }},
		{"margin", func(c *Config) { c.Margin = -1 }},
		{"eval_sets[0] (gsm8k).fields", func(c *Config) { c.EvalSets[0].Fields = nil }},
	} {
		c := DefaultConfig()
		tc.mod(&c)
		if _, err := Build(c); err == nil || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%s: err = %v", tc.field, err)
		}
	}
}

func TestConcurrentCheck(t *testing.T) {
	x := defaultIndex(t)
	items := gsmTest(t)
	var wg sync.WaitGroup
	errs := make(chan string, 100)
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; i < 200; i += 4 {
				m := x.Check("", "prefix words "+items[i].question)
				if len(strings.Fields(items[i].question)) >= 16 && (!m.Hit || m.Hits[0].ItemID != fmt.Sprintf("test.jsonl:%d", items[i].line)) {
					errs <- fmt.Sprintf("item %d: %+v", i, m.Hits)
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

func benchText(b *testing.B) ([]string, int) {
	p, err := datadir.Path("tinyshakespeare/input.txt")
	if err != nil {
		b.Fatal(err)
	}
	raw, err := os.ReadFile(p)
	if err != nil {
		b.Fatal(err)
	}
	var docs []string
	s := string(raw)
	total := 0
	for len(s) > 4096 {
		docs = append(docs, s[:4096])
		total += 4096
		s = s[4096:]
	}
	return docs, total
}

// BenchmarkTokenize is the reference for BenchmarkIndexCheck: word
// splitting, normalisation and word hashing alone.
func BenchmarkTokenize(b *testing.B) {
	docs, total := benchText(b)
	b.SetBytes(int64(total))
	s := &scratch{}
	for b.Loop() {
		for _, d := range docs {
			s.tokenize(d)
		}
	}
}

func BenchmarkIndexCheck(b *testing.B) {
	x := defaultIndex(b)
	docs, total := benchText(b)
	b.SetBytes(int64(total))
	for b.Loop() {
		for _, d := range docs {
			x.Check("", d)
		}
	}
}
