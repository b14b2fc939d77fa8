package dedup

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/datadir"
)

func TestNormalizeText(t *testing.T) {
	cases := []struct{ in, want string }{
		{"Hello,  World!", "hello world"},
		{"  tabs\tand\nnewlines  ", "tabs and newlines"},
		{"Janet’s ducks — “lay” 16 eggs…", "janets ducks lay 16 eggs"},
		{"$2 + 3 = 5", "$2 + 3 = 5"},
		{"ÉCOLE Über", "école über"},
		{"", ""},
		{"!!! ...", ""},
	}
	for _, c := range cases {
		if got := NormalizeText(c.in); got != c.want {
			t.Errorf("NormalizeText(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestExact(t *testing.T) {
	e := NewExact()
	if first, dup := e.Add("a", "Hello, World!"); dup || first != "a" {
		t.Fatalf("first add: %q %v", first, dup)
	}
	if first, dup := e.Add("b", "hello   world"); !dup || first != "a" {
		t.Fatalf("normalised duplicate: %q %v", first, dup)
	}
	if _, dup := e.Add("c", "hello world again"); dup {
		t.Fatal("distinct text flagged")
	}
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 100; i++ {
				e.Add(fmt.Sprintf("g%d-%d", g, i), fmt.Sprintf("text number %d", i))
			}
		}()
	}
	wg.Wait()
	if docs, dups := e.Counts(); docs != 403 || dups != 1+300 {
		t.Fatalf("counts = %d, %d; want 403, 301", docs, dups)
	}
}

func TestConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		field string
		mod   func(*Config)
	}{
		{"num_bands", func(c *Config) { c.NumBands = 0 }},
		{"rows", func(c *Config) { c.Rows = -1 }},
		{"ngram", func(c *Config) { c.NGram = 0 }},
		{"threshold", func(c *Config) { c.Verify = true; c.Threshold = 1.5 }},
	} {
		c := DefaultConfig()
		tc.mod(&c)
		if _, err := NewNear(c); err == nil || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%s: err = %v", tc.field, err)
		}
	}
}

// paragraphs returns real paragraphs of at least minWords words from
// WikiText-2, Shakespeare (blank-line blocks merged to size) and GSM8K.
func paragraphs(t testing.TB, minWords, perSource int) []string {
	t.Helper()
	read := func(rel string) string {
		p, err := datadir.Path(rel)
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	var out []string
	n := 0
	for _, l := range strings.Split(read("wikitext-2/valid.txt"), "\n") {
		if len(strings.Fields(l)) >= minWords && !strings.HasPrefix(strings.TrimSpace(l), "=") && n < perSource {
			out = append(out, strings.TrimSpace(l))
			n++
		}
	}
	n = 0
	var cur []string
	for _, blk := range strings.Split(read("tinyshakespeare/input.txt"), "\n\n") {
		cur = append(cur, blk)
		if len(strings.Fields(strings.Join(cur, " "))) >= minWords {
			if n < perSource {
				out = append(out, strings.Join(cur, "\n\n"))
				n++
			}
			cur = cur[:0]
		}
	}
	n = 0
	p, err := datadir.Path("gsm8k/train.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	fh, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() && n < perSource {
		var m struct{ Question, Answer string }
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		s := m.Question + "\n" + m.Answer
		if len(strings.Fields(s)) >= minWords {
			out = append(out, s)
			n++
		}
	}
	return out
}

// edit replaces frac of the words of s with random tokens, scattered
// (distinct random positions) or in one contiguous run.
func edit(s string, frac float64, contiguous bool, rng *rand.Rand) string {
	w := strings.Fields(s)
	k := int(math.Ceil(frac * float64(len(w))))
	if contiguous {
		start := rng.IntN(len(w) - k + 1)
		for i := start; i < start+k; i++ {
			w[i] = fmt.Sprintf("zq%dx", rng.IntN(1e6))
		}
	} else {
		for _, i := range rng.Perm(len(w))[:k] {
			w[i] = fmt.Sprintf("zq%dx", rng.IntN(1e6))
		}
	}
	return strings.Join(w, " ")
}

func shingleSet(n *Near, s string) []uint64 {
	var sh []uint64
	n.signature(s, nil, &addScratch{}, &sh)
	slices.Sort(sh)
	return slices.Compact(sh)
}

type plantStats struct {
	recall, theory, meanJ float64
	falsePairs            int
}

// plant runs Near over originals plus one edited copy of each and measures
// recall (copy clustered with its original), the LSH S-curve prediction
// from the pairs' exact Jaccard, and clusters mixing different originals.
func plant(t *testing.T, cfg Config, docs []string, frac float64, contiguous bool) plantStats {
	n, err := NewNear(cfg)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(7, uint64(frac*1000)))
	var st plantStats
	for i, d := range docs {
		e := edit(d, frac, contiguous, rng)
		n.Add(fmt.Sprintf("o%04d", i), d)
		n.Add(fmt.Sprintf("o%04d-copy", i), e)
		j := jaccard(shingleSet(n, d), shingleSet(n, e))
		st.meanJ += j
		st.theory += 1 - math.Pow(1-math.Pow(j, float64(cfg.Rows)), float64(cfg.NumBands))
	}
	res, err := n.Finish()
	if err != nil {
		t.Fatal(err)
	}
	hit := 0
	for i := range docs {
		if res.Dropped[fmt.Sprintf("o%04d-copy", i)] == fmt.Sprintf("o%04d", i) {
			hit++
		}
	}
	for _, c := range res.Clusters {
		for _, m := range c.Members {
			if m[:5] != c.Kept[:5] {
				st.falsePairs++
			}
		}
	}
	nd := float64(len(docs))
	st.recall, st.theory, st.meanJ = float64(hit)/nd, st.theory/nd, st.meanJ/nd
	return st
}

func TestNearPlanted(t *testing.T) {
	docs := paragraphs(t, 80, 120)
	if len(docs) < 300 {
		t.Fatalf("only %d real paragraphs", len(docs))
	}
	// Precision on distinct real documents: nothing may be clustered.
	n, _ := NewNear(DefaultConfig())
	for i, d := range docs {
		n.Add(fmt.Sprintf("d%04d", i), d)
	}
	res, err := n.Finish()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("distinct docs: %d, clustered as near-dups: %d (near_dup_rate %.4f), bytes/doc %d",
		len(docs), len(res.Dropped), res.NearDupRate(), n.BytesPerDoc())
	if res.NearDupRate() > 0.01 {
		t.Errorf("precision: %.3f of distinct docs dropped: %v", res.NearDupRate(), res.Largest(3))
	}
	alt := DefaultConfig()
	alt.NumBands, alt.Rows = 20, 5
	t.Logf("planted near-duplicates on %d real paragraphs (WikiText-2, Shakespeare, GSM8K; >= 80 words):", len(docs))
	t.Logf("%-10s %-6s %-8s | %-6s %-9s %-7s | %-12s", "edits", "kind", "meanJ", "recall", "S-curve", "false", "recall 20x5")
	for _, frac := range []float64{0.01, 0.02, 0.05, 0.10} {
		for _, contiguous := range []bool{false, true} {
			st := plant(t, DefaultConfig(), docs, frac, contiguous)
			st2 := plant(t, alt, docs, frac, contiguous)
			kind := "scatter"
			if contiguous {
				kind = "span"
			}
			t.Logf("%-10s %-6s %-8.3f | %-6.3f %-9.3f %-7d | %-12.3f", fmt.Sprintf("%.0f%%", frac*100), kind, st.meanJ, st.recall, st.theory, st.falsePairs, st2.recall)
			if st.falsePairs > 0 {
				t.Errorf("%v%% %s: %d members clustered with a different original", frac*100, kind, st.falsePairs)
			}
			// MinHash must match the LSH S-curve predicted from exact Jaccard.
			if math.Abs(st.recall-st.theory) > 0.08 {
				t.Errorf("%v%% %s: recall %.3f far from S-curve %.3f", frac*100, kind, st.recall, st.theory)
			}
			// 14×8 (FineWeb) targets Jaccard ≳ 0.75: scattered edits beyond
			// ~1% of words fall below it; 20×5 reaches further.
			if (frac <= 0.01 || contiguous && frac <= 0.05) && st.recall < 0.9 {
				t.Errorf("14x8 %v%% %s: recall %.3f < 0.9", frac*100, kind, st.recall)
			}
			if (frac <= 0.02 || contiguous) && st2.recall < 0.9 {
				t.Errorf("20x5 %v%% %s: recall %.3f < 0.9", frac*100, kind, st2.recall)
			}
		}
	}
}

func TestNearDeterministic(t *testing.T) {
	docs := paragraphs(t, 60, 40)
	rng := rand.New(rand.NewPCG(1, 2))
	type doc struct{ id, text string }
	var all []doc
	for i, d := range docs {
		all = append(all, doc{fmt.Sprintf("%03d", i), d})
		if i%3 == 0 { // three copies, ids chosen so the kept one is not the first added
			all = append(all, doc{fmt.Sprintf("%03d-b", i), edit(d, 0.01, false, rng)})
			all = append(all, doc{fmt.Sprintf("%03d-a", i), edit(d, 0.01, true, rng)})
		}
	}
	for _, verify := range []bool{false, true} {
		cfg := DefaultConfig()
		cfg.Verify = verify
		var first *Result
		for trial := 0; trial < 4; trial++ {
			order := rand.New(rand.NewPCG(uint64(trial), 9)).Perm(len(all))
			n, err := NewNear(cfg)
			if err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			ch := make(chan int)
			for g := 0; g < 3; g++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range ch {
						n.Add(all[i].id, all[i].text)
					}
				}()
			}
			for _, i := range order {
				ch <- i
			}
			close(ch)
			wg.Wait()
			res, err := n.Finish()
			if err != nil {
				t.Fatal(err)
			}
			if first == nil {
				first = res
				if len(res.Clusters) == 0 {
					t.Fatal("no clusters found")
				}
				for _, c := range res.Clusters {
					if c.Kept != c.Members[0] || strings.Contains(c.Kept, "-") {
						t.Errorf("kept %q of %v: want the smallest id, the original", c.Kept, c.Members)
					}
				}
				t.Logf("verify=%v: %d docs, %d clusters, near_dup_rate %.3f, bytes/doc %d",
					verify, res.Docs, len(res.Clusters), res.NearDupRate(), n.BytesPerDoc())
				continue
			}
			if !reflect.DeepEqual(first, res) {
				t.Fatalf("verify=%v trial %d: result depends on Add order", verify, trial)
			}
		}
	}
}

func TestEmptyAndShortDocs(t *testing.T) {
	n, _ := NewNear(DefaultConfig())
	n.Add("e1", "")
	n.Add("e2", "  ... ")
	n.Add("s1", "two words")
	n.Add("s2", "Two words!")
	res, _ := n.Finish()
	if len(res.Clusters) != 1 || res.Clusters[0].Kept != "s1" || res.Dropped["s2"] != "s1" {
		t.Fatalf("clusters %+v", res.Clusters)
	}
	if res.Docs != 4 || res.NearDupRate() != 0.25 {
		t.Fatalf("docs %d rate %v", res.Docs, res.NearDupRate())
	}
}

func benchDocs(b *testing.B) ([]string, int) {
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
	for len(s) > 4096 {
		docs = append(docs, s[:4096])
		s = s[4096:]
	}
	total := 0
	for _, d := range docs {
		total += len(d)
	}
	return docs, total
}

// BenchmarkNormalize is the reference for BenchmarkNearAdd: one pass of
// text normalisation over the same bytes.
func BenchmarkNormalize(b *testing.B) {
	docs, total := benchDocs(b)
	b.SetBytes(int64(total))
	var buf []byte
	for b.Loop() {
		for _, d := range docs {
			buf = AppendNormalized(buf[:0], d)
		}
	}
}

func BenchmarkNearAdd(b *testing.B) {
	docs, total := benchDocs(b)
	b.SetBytes(int64(total))
	for b.Loop() {
		n, _ := NewNear(DefaultConfig())
		for i, d := range docs {
			n.Add(fmt.Sprint(i), d)
		}
	}
}

func BenchmarkExactAdd(b *testing.B) {
	docs, total := benchDocs(b)
	b.SetBytes(int64(total))
	for b.Loop() {
		e := NewExact()
		for i, d := range docs {
			e.Add(fmt.Sprint(i), d)
		}
	}
}
